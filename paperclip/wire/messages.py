"""The runner protocol, version 1: every message a typed struct, validated once at decode.

The control plane and a runner talk over one WebSocket, one JSON object per
text frame with a string ``type``. Data messages carry the sender's ``seq``
(1, 2, 3, ... per sender stream) and stay in the sender's outbox until the
peer acknowledges them; ``ack`` is cumulative. The one exception is a
``tool_result`` with ``seq`` 0 (``FEATURE_UNSEQUENCED_RESULTS``). Control messages (``hello``,
``welcome``, ``ack``, ``error``) carry no ``seq``. A field a receiver does not
know is ignored, and a field added later has a default, so an older peer still
decodes. See docs/runner-protocol.md.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

import msgspec

from paperclip.wire.model_rules import ModelProfile

PROTOCOL = "paperclip.runner.v1"
PATH = "/api/runner/v1/connect"
MAX_MESSAGE_BYTES = 4 * 1024 * 1024

# WebSocket close codes (4000-4999 are the application's)
CLOSE_PROTOCOL_ERROR = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_REPLACED = 4409
"""Another connection of the same runner took over."""

FEATURE_WORKSPACES = "workspaces"
"""A peer that says so in ``hello`` / ``welcome`` speaks the workspace messages below and
runs a turn in the worktree its ``start_turn`` names."""
FEATURE_PROVIDER_REPORT = "provider_report"
"""A control plane that says so in ``welcome`` keeps a runner's ``provider_report``."""
FEATURE_UNSEQUENCED_RESULTS = "unsequenced_results"
"""A runner that says so in ``hello`` takes a ``tool_result`` with ``seq`` 0: sent once, outside
the outbox, for a call whose result the journal already holds. It is not acknowledged; one
the runner misses (the connection ended first) is sent again, sequenced, when ``hello``
names its call among ``pending_calls``."""
FEATURE_WORKSPACE_MERGE = "workspace_merge"
"""A runner that says so in ``hello`` merges an issue's branch into its base branch when asked
(``merge_workspace``, answered ``workspace_merged``). An older runner is never asked."""

MergeStrategy = Literal["fast_forward", "merge_commit"]
"""How a branch is merged into its base: the base branch moved to the branch's head (only when
the base is an ancestor of it), or a merge commit of the two."""
MERGE_STRATEGIES: tuple[MergeStrategy, ...] = ("fast_forward", "merge_commit")


class ProtocolError(Exception):
    """A frame that is not a message of this protocol."""


class Message(msgspec.Struct, tag_field="type", kw_only=True):
    """Any message; ``type`` is the struct's tag."""


class DataMessage(Message):
    """A numbered message: kept in the sender's outbox until acknowledged."""

    seq: int


# runner -> control plane


class WorkspaceSpec(msgspec.Struct, kw_only=True):
    """The git worktree an issue's runs work in, as the control plane asks a runner for it.

    The runner makes it on first use (idempotently), under its own workspaces folder,
    from a repository its host allows; every later turn of the issue works in it.
    """

    key: str
    """Its folder under the runner's workspaces folder: ``<company id>/<ISSUE-IDENTIFIER>``."""
    branch: str
    """The issue's branch (``paperclip/ACM-1``), made from the base on first use, then kept."""
    repo_path: str | None = None
    """A repository on the runner host (one of the two sources)."""
    repo_url: str | None = None
    """A clone URL: fetched into a bare mirror the runner keeps (the other source)."""
    base_ref: str | None = None
    """The branch the issue's branch starts from; None: the repository's own HEAD branch."""
    base_commit: str | None = None
    """The commit the issue's branch started from, once recorded: the base of its work product."""
    hooks: bool = False
    """Whether the repository's git hooks run (the project enables them); off by default."""


class FileChange(msgspec.Struct, kw_only=True):
    """One changed file of a work product, against the base commit."""

    path: str
    status: str
    """``A``dded, ``M``odified, ``D``eleted, ``R``enamed, ... (git's letters); ``?`` untracked."""
    added: int | None = None
    """Lines added (None: a binary file)."""
    deleted: int | None = None


class WorkspaceState(msgspec.Struct, kw_only=True):
    """What the worktree holds now: a turn's work product."""

    path: str
    branch: str
    head: str
    """The commit HEAD points at."""
    base_ref: str
    base_commit: str
    ahead: int = 0
    """Commits on the branch since the base commit."""
    files: list[FileChange] = []
    """Changed files against the base commit, committed or not (untracked ones included)."""
    files_truncated: bool = False
    untracked: int = 0
    dirty: bool = False
    """Uncommitted changes (tracked or untracked) in the worktree."""
    disk_bytes: int | None = None


class HostedRun(msgspec.Struct, kw_only=True):
    """A run a runner process still hosts, as it reports it in ``hello``."""

    run_id: uuid.UUID
    pending_calls: list[str] = []
    """The ``call_id`` of each tool call still waiting for its result."""
    turn: int = 0
    """The turn it runs (0: a runner that does not say)."""


class Hello(Message, tag="hello"):
    protocol: str
    runner_instance: str
    """This runner process (``<hostname>:<pid>:<8 hex>``): new on every process start."""
    providers: list[str] = []
    received_seq: int = 0
    """The last control-plane ``seq`` this process processed (0 for a new process)."""
    runs: list[HostedRun] = []
    features: list[str] = []
    """What this runner speaks beyond the base protocol (``workspaces``)."""
    workspace_dir: str = ""
    """Where this runner keeps worktrees: a worktree is ``<workspace_dir>/<key>``."""
    workspace_roots: list[str] = []
    """The folders this host lets repositories come from (its own decision)."""
    workspace_remotes: list[str] = []
    """The clone URL patterns this host lets repositories be fetched from."""
    launch_profiles: dict[str, list[str]] = {}
    """The launch profiles this host offers, by provider: their names, never their commands."""
    model_profiles: dict[str, ModelProfile] | None = None
    """The model profiles this host offers (endpoints, key variable names, sandbox and
    approval values; never a key's value). None: an older runner, which says nothing."""


class Event(DataMessage, tag="event"):
    run_id: uuid.UUID
    event_type: str
    payload: dict[str, Any] = {}
    turn: int = 0
    """The run's turn whose provider emitted it (0: a runner that does not say; logged
    under the run's current turn). An event can arrive after its turn was given up."""


class ToolCall(DataMessage, tag="tool_call"):
    run_id: uuid.UUID
    call_id: str
    """The runner's id for this call: unique per run."""
    tool: str
    arguments: dict[str, Any] = {}
    token: str = ""
    """The run's token: the call acts for ``run_id`` only if it is that run's live token."""


class TurnStarted(DataMessage, tag="turn_started"):
    """The runner started the turn's provider, and (when known) its session."""

    run_id: uuid.UUID
    turn: int
    session_ref: str | None = None


TurnStatus = Literal["completed", "interrupted", "failed"]


class TurnFinished(DataMessage, tag="turn_finished"):
    run_id: uuid.UUID
    status: TurnStatus
    turn: int = 0
    """The turn that ended (0: a runner that does not say; it is the run's current one)."""
    session_ref: str | None = None
    error: str | None = None
    error_code: str | None = None
    """Why the runner refused or lost the turn (``launch_not_allowed``, ...); None: the
    provider's own failure (``provider_turn_failed``)."""
    answer: str | None = None
    """The turn's final prose, when the provider reported one."""
    provider_turn_id: str | None = None
    """The provider's own id of the turn, when it has one."""


class WorkspaceReport(DataMessage, tag="workspace_report"):
    """The state of a run's worktree: once it is ready for a turn, and after each turn."""

    run_id: uuid.UUID
    turn: int
    moment: Literal["ready", "turn_end"]
    state: WorkspaceState
    diff: str = ""
    """``git diff`` of the worktree against the base commit, cut at the runner's limit."""
    diff_truncated: bool = False


class Usage(DataMessage, tag="usage"):
    """One model response's usage, as the provider reported it (``TurnUsage``)."""

    run_id: uuid.UUID
    turn: int
    key: str
    """Unique in the run: the same key again is the same usage (counted once)."""
    model: str = ""
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_micros: int | None = None
    """The provider's own cost, in millionths of ``currency``; None: not given."""
    currency: str = "USD"


class WorkspaceReleased(DataMessage, tag="workspace_released"):
    """A ``release_workspace`` done: the worktree is gone, its branch kept."""

    issue_id: uuid.UUID
    saved_ref: str | None = None
    """Where uncommitted changes were saved first (a ref in the repository), if any."""
    error_code: str | None = None
    error: str | None = None


class WorkspaceMerged(DataMessage, tag="workspace_merged"):
    """A ``merge_workspace`` done: the branch merged into its base, or why not (nothing changed).

    The runner answers the same request id with the same answer again (it keeps its answers),
    so a request sent twice is merged once."""

    request_id: uuid.UUID
    issue_id: uuid.UUID
    status: Literal["merged", "refused"]
    commit: str | None = None
    """The base branch's commit after the merge (the branch's head after a fast-forward)."""
    head: str | None = None
    """The branch's head that was merged."""
    merged_commits: int = 0
    """Commits of the branch the base branch did not have."""
    conflicts: list[str] = []
    """The files the merge could not reconcile (``merge_conflict``)."""
    files: list[str] = []
    """The uncommitted files in the base branch's checkout that the merge would touch
    (``base_checkout_dirty``)."""
    error_code: str | None = None
    """Why not: ``merge_conflict``, ``nothing_to_merge``, ``not_fast_forward``,
    ``base_checkout_dirty``, ``merge_not_supported``, or a workspace error code."""
    error: str | None = None
    state: WorkspaceState | None = None
    """The worktree's work product against its new base (the merged head), after a merge."""
    diff: str = ""
    diff_truncated: bool = False


class RunnerStatus(Message, tag="runner_status"):
    """How much disk the runner's workspaces use (sent now and then; not kept)."""

    workspace_bytes: int
    workspace_count: int
    mirror_bytes: int = 0


class ProviderProbe(msgspec.Struct, kw_only=True):
    """Whether one launch profile's executable is installed on the runner's host."""

    provider: str
    profile: str
    found: bool | None
    """None: the plugin cannot tell (no probe), or its probe failed."""
    version: str | None = None
    hint: str = ""
    """What to do when it is missing or unusable."""


class ProviderReport(Message, tag="provider_report"):
    """The runner's launch profiles, probed once after the process starts (as ``paperclip
    doctor`` probes them), sent after each ``welcome`` of a control plane that keeps it."""

    probes: list[ProviderProbe]


class SteerResult(DataMessage, tag="steer_result"):
    run_id: uuid.UUID
    message_id: str
    acknowledged: bool = False
    turn: int = 0
    """The turn the steer was sent into, as ``Event.turn``."""


# control plane -> runner


class Welcome(Message, tag="welcome"):
    replica: str
    acked_seq: int = 0
    """The runner's messages the control plane processed durably (a cumulative ack)."""
    features: list[str] = []
    """What this control plane speaks beyond the base protocol (``workspaces``)."""


class StartTurn(DataMessage, tag="start_turn"):
    run_id: uuid.UUID
    provider: str
    token: str
    turn: int = 1
    """The turn's number in its run: a runner starts each (run, turn) at most once."""
    config: dict[str, Any] = {}
    prompt: str = ""
    system: str | None = None
    session_ref: str | None = None
    """The provider session to resume (a restart continuation), or None for a new one."""
    issue_id: uuid.UUID | None = None
    """The run's issue (added later: an older runner ignores it, an older control plane omits it)."""
    workspace: WorkspaceSpec | None = None
    """The worktree the turn works in (the issue's project); None: a scratch folder of the run.
    Sent only to a runner that says ``workspaces`` in its ``hello``."""
    agent_name: str | None = None
    """The agent's name: the author of the commits it makes in its worktree."""


class ToolResult(DataMessage, tag="tool_result"):
    run_id: uuid.UUID
    call_id: str
    content: Any = None
    is_error: bool = False


class Steer(DataMessage, tag="steer"):
    run_id: uuid.UUID
    message_id: str
    text: str
    turn: int = 0
    """The turn it was sent into: a runner running another turn of the run refuses it
    (0: any turn, from a control plane that does not say)."""


class Interrupt(DataMessage, tag="interrupt"):
    run_id: uuid.UUID


class Close(DataMessage, tag="close"):
    run_id: uuid.UUID


class ReleaseWorkspace(DataMessage, tag="release_workspace"):
    """The issue is over: remove its worktree (uncommitted changes saved to a ref first),
    keep its branch; answered with ``workspace_released``."""

    issue_id: uuid.UUID
    workspace: WorkspaceSpec


class MergeWorkspace(DataMessage, tag="merge_workspace"):
    """Merge the issue's branch into its base branch, in the host repository, as the runner's
    user; answered with ``workspace_merged``. Sent only to a runner that says
    ``workspace_merge``."""

    request_id: uuid.UUID
    """The request: the runner merges once per request id and answers a repeat the same."""
    issue_id: uuid.UUID
    workspace: WorkspaceSpec
    strategy: MergeStrategy = "fast_forward"
    message: str = ""
    """The merge commit's message (``merge_commit``); empty: ``Merge <branch>``."""


# both ways


class Ack(Message, tag="ack"):
    upto: int


class Error(Message, tag="error"):
    message: str
    seq: int | None = None
    """The message it is about, when there is one."""


FromRunner = (
    Hello
    | Event
    | ToolCall
    | TurnStarted
    | TurnFinished
    | SteerResult
    | WorkspaceReport
    | WorkspaceReleased
    | WorkspaceMerged
    | Usage
    | RunnerStatus
    | ProviderReport
    | Ack
    | Error
)
ToRunner = (
    Welcome
    | StartTurn
    | ToolResult
    | Steer
    | Interrupt
    | Close
    | ReleaseWorkspace
    | MergeWorkspace
    | Ack
    | Error
)
ToRunnerData = (
    StartTurn | ToolResult | Steer | Interrupt | Close | ReleaseWorkspace | MergeWorkspace
)

_from_runner = msgspec.json.Decoder(FromRunner)
_to_runner = msgspec.json.Decoder(ToRunner)
_encoder = msgspec.json.Encoder()


def connect_url(base: str) -> str:
    """The runner endpoint's WebSocket URL on the control plane at ``base`` (http or ws)."""
    base = base.rstrip("/")
    if base.startswith("http"):
        base = "ws" + base[4:]
    return base + PATH


def encode(message: Message) -> str:
    return _encoder.encode(message).decode()


def decode_from_runner(frame: str | bytes) -> FromRunner:
    """A runner's frame as its message; ProtocolError when it is not one."""
    return _decode(_from_runner, frame)  # type: ignore[no-any-return]


def decode_to_runner(frame: str | bytes) -> ToRunner:
    """A control plane's frame as its message; ProtocolError when it is not one."""
    return _decode(_to_runner, frame)  # type: ignore[no-any-return]


def _decode(decoder: msgspec.json.Decoder[Any], frame: str | bytes) -> Any:
    if len(frame) > MAX_MESSAGE_BYTES:
        raise ProtocolError("message too large")
    try:
        return decoder.decode(frame)
    except msgspec.DecodeError as exc:
        raise ProtocolError(str(exc)) from exc


def payload_of(message: DataMessage) -> dict[str, Any]:
    """A data message's fields without ``type``, ``seq`` and ``run_id`` (as an outbox row keeps them)."""
    body: dict[str, Any] = msgspec.to_builtins(message)
    for key in ("type", "seq", "run_id"):
        body.pop(key, None)
    return body


def frame_of(type_: str, seq: int, run_id: uuid.UUID | None, payload: dict[str, Any]) -> str:
    """The frame of a stored outbox row: its payload with ``type``, ``seq`` and ``run_id``."""
    body = {"type": type_, "seq": seq, **payload}
    if run_id is not None:
        body["run_id"] = run_id
    return _encoder.encode(body).decode()
