"""Providers: which provider kinds exist, what they can do, and how the runner drives them.

A provider kind is registered by a plugin through ``paperclip_providers``. The
runner asks the kind for a driver per run; the driver owns the provider
process (``codex app-server``, ``opencode serve``, ``pi --mode rpc``, a gateway
socket) and turns one prompt into one provider turn, streaming events back.
The control plane reads only the kind's name and capabilities.

What a driver must do for a run to succeed: the run succeeds when the model
reports with the ``finish`` tool (or ``block``) and the driver then returns a
``completed`` :class:`TurnResult`. So a driver gives the model the run's tools
(:attr:`TurnInput.mcp`: configure an MCP-speaking provider with it, or call
the tools through :class:`paperclip_hookspecs.tools.ToolClient`), sends every
provider notification to the event sink, and ends the turn when the provider
does: ``completed`` with the final prose in :attr:`TurnResult.answer`, or
``failed`` with an error that says why. A turn that completes without an
accepted ``finish`` or ``block`` fails the run with ``finish_not_called``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from paperclip_hookspecs._markers import hookspec
from paperclip_hookspecs.usage import TurnUsage
from paperclip_hookspecs.workspaces import ExecutionWorkspace

LAUNCH_KEY = "launch"
"""The provider-config key that names a launch profile of the runner (hook API 1.2).

Its value is a profile name (``"default"`` when absent). Which command a
profile starts is the runner host's decision: the profiles a provider kind
offers (:attr:`ProviderKind.launch`), unless the runner's own configuration
replaces them. An agent's config can only select among them, never name an
executable.
"""
DEFAULT_LAUNCH = "default"

MODEL_PROFILE_KEY = "model_profile"
"""The provider-config key that names a model profile of the runner (hook API 1.9).

Its value is a profile name (``"default"`` when absent). Which model endpoints,
key variables, sandbox modes and approval answers a profile allows is the runner
host's decision (``PAPERCLIP_RUNNER_MODELS``); the runner refuses a run whose
config asks for more (``model_profile_not_allowed``). The core owns this key: a
driver never sees it in :attr:`TurnInput.config`.
"""
DEFAULT_MODEL_PROFILE = "default"
BUILTIN_ENDPOINT = "builtin"
"""In :attr:`ModelAccess.endpoints`: the provider's own built-in endpoint (no ``base_url``)."""


@dataclass(frozen=True, slots=True)
class ModelAccess:
    """What an agent's provider config asks of the runner host (hook API 1.9).

    :attr:`ProviderKind.model_access` reads it from a config; the runner checks it
    against the model profile the agent names, before any process starts.
    """

    endpoints: tuple[str, ...] = ()
    """Where the provider sends the model's requests, and with them its key: URLs, or
    :data:`BUILTIN_ENDPOINT` for the provider's own. Empty: it reaches no model itself
    (a gateway, whose launch profile decides)."""
    keys: tuple[str, ...] = ()
    """The runner's environment variables the provider reads a model key from."""
    sandbox: str | None = None
    """The sandbox mode the agent selects (Codex's ``sandbox``), if the provider has one."""
    approvals: str | None = None
    """How the provider's requests to leave its sandbox are answered (``decline`` or
    ``approve``), if it asks any."""


@dataclass(frozen=True, slots=True)
class ProcessUser:
    """The Unix user a provider process runs as (hook API 1.9)."""

    uid: int
    gid: int
    name: str = ""
    home: str = ""
    """A folder of its own it may write (also ``HOME`` in :attr:`DriverContext.process_env`)."""

    def subprocess_kwargs(self) -> dict[str, Any]:
        """Arguments of ``asyncio.create_subprocess_exec`` that start a program as this user,
        with its own group and no other (``preexec_fn``: the runner's event loop may be uvloop,
        which takes no ``user``/``group`` arguments)."""
        return {"preexec_fn": self._become}

    def _become(self) -> None:
        os.setgroups([])
        os.setgid(self.gid)
        os.setuid(self.uid)

    def give(self, path: str) -> None:
        """Make the folder ``path`` and everything under it this user's: a driver calls it on
        what it wrote for the provider (its home, its config) before starting the process.

        Symbolic links are never followed (the user may have put them there): a link is
        changed itself, and ``path`` must be a folder in a folder the user cannot change."""
        if os.path.islink(path):
            raise OSError(f"{path} is a symbolic link, not a folder")
        for _, folders, files, dir_fd in os.fwalk(path, follow_symlinks=False):
            for name in (*folders, *files):
                os.chown(name, self.uid, self.gid, dir_fd=dir_fd, follow_symlinks=False)
        os.chown(path, self.uid, self.gid, follow_symlinks=False)


@dataclass(frozen=True, slots=True)
class ProviderCapabilities:
    """What a provider kind can do; the core selects behaviour from these, never from names."""

    steer: bool = False
    """A message can enter a running turn (not merely queue after it). The runner
    forwards a steer to :meth:`ProviderDriver.steer` only when ``steer`` or
    ``follow_up`` is set; otherwise it is refused without reaching the driver."""
    resume: bool = False
    """A session can be resumed by a later turn or run: the runner passes
    :attr:`TurnInput.session_ref` only to kinds that say so."""
    mcp_tools: bool = False
    """The model can call the run's server-owned tools (over MCP, or through
    :class:`~paperclip_hookspecs.tools.ToolClient`): the runner gives
    :attr:`TurnInput.mcp` only to kinds that say so. Without tools a run cannot
    report ``finish``, so it ends ``finish_not_called``."""
    fresh_retry: bool = False
    """When a resume fails, a fresh session may be started with the full brief."""
    follow_up: bool = False
    """A message can be queued to run after the current turn (hook API 1.2): a steer
    to a kind with ``follow_up`` but not ``steer`` is delivered that way."""
    system_prompt: bool = False
    """The provider carries :attr:`TurnInput.system` as its system prompt (hook API 1.2):
    the control plane then puts the standing rules there rather than in the prompt."""


@dataclass(frozen=True, slots=True)
class McpEndpoint:
    """The run's server-owned tools, served by the runner over MCP streamable HTTP on loopback.

    Give it to the provider as an MCP server (``name`` is the server's name,
    ``paperclip``), or call it with :class:`paperclip_hookspecs.tools.ToolClient`.
    Every request carries ``Authorization: Bearer <bearer_token>``; the token acts
    as this run only and is refused once the run ends, so it never outlives the
    turn. Keep it out of files other processes can read (pass it in the
    provider's environment or its request headers).
    """

    name: str
    """The MCP server name to configure (tools appear to the model under it)."""
    url: str
    """``http://127.0.0.1:<port>/mcp``: POST only, JSON-RPC, stateless."""
    bearer_token: str
    """The run's token."""


@dataclass(frozen=True, slots=True)
class TurnInput:
    """One provider turn to run, as the runner hands it to :meth:`ProviderDriver.run_turn`."""

    run_id: str
    """The run's id (a UUID): stable across restarts, a natural idempotency key."""
    prompt: str
    """What the model is asked this turn: the task brief and wake prompt, assembled by
    the prompt hooks. Send it as the user message."""
    cwd: str
    """The turn's working directory on the runner, writable: the issue's worktree when the
    issue belongs to a project (:attr:`workspace`), else the run's folder
    (``<work dir>/runs/<run id>``), or its ``work`` folder when the process runs as an agent
    user (:attr:`DriverContext.user`, hook API 1.9)."""
    session_ref: str | None = None
    """The provider session to resume (a Codex thread id, ...), or None for a fresh one.
    Only given to kinds whose capabilities say ``resume``."""
    mcp: McpEndpoint | None = None
    """The run's tools; None when the kind does not declare ``mcp_tools``."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """The agent's provider configuration, as stored on the agent (checked against
    :attr:`ProviderKind.config_schema`; check it again, a runner may serve an older
    control plane). Never a source of commands or paths to execute."""
    system: str | None = None
    """Standing rules for the model (hook API 1.2): a provider whose capabilities say
    ``system_prompt`` carries them as its system prompt; others get them in ``prompt``."""
    issue_id: str | None = None
    """The issue the run works on (hook API 1.4), None for a run without one: lets a
    provider keep one conversation per issue (a gateway's session key)."""
    workspace: ExecutionWorkspace | None = None
    """The issue's git worktree (hook API 1.8), which is then :attr:`cwd`; None: ``cwd`` is
    the run's scratch folder. Keep provider state (homes, session files) in
    :attr:`DriverContext.state_dir`, never in the worktree."""


@dataclass(frozen=True, slots=True)
class ProviderEvent:
    """One notification from the provider, persisted verbatim as a run event."""

    type: str
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended, as the provider reported it."""

    status: Literal["completed", "interrupted", "failed"]
    session_ref: str | None = None
    error: str | None = None
    answer: str | None = None
    """The turn's final prose (hook API 1.2): what the model said last, presented as the
    run's answer when the presentation decision says so."""
    error_code: str | None = None
    """Why the turn failed, as a code (hook API 1.3). ``PROVIDER_EXITED`` and
    ``PROVIDER_SPAWN_FAILED`` say the provider process, not the model, failed: the
    control plane then resumes the session in a new turn instead of failing the run.
    ``RESUME_FAILED``: the session could not be resumed (a fresh retry may follow)."""
    provider_turn_id: str | None = None
    """The provider's own id of this turn (a Codex turn id), when it has one (hook API 1.3):
    recorded on the run's turn, for following it into the provider's logs."""


PROVIDER_EXITED = "provider_exited"
"""The provider process went away during the turn (it was killed, it crashed)."""
PROVIDER_SPAWN_FAILED = "provider_spawn_failed"
"""The provider process could not be started, or did not answer its handshake."""
RESUME_FAILED = "resume_failed"
"""The provider could not resume the session it was given: a fresh session may be tried."""


EventSink = Callable[[ProviderEvent], Awaitable[None]]
"""Where a driver sends events; awaiting it applies back-pressure."""


class ProviderDriver(Protocol):
    """Drives one provider session for one run. Methods are called from one event loop."""

    async def run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        """Start or resume the session and run one turn to its end."""
        ...

    async def steer(self, message_id: str, text: str) -> bool:
        """Send a message into the running turn; True when the provider acknowledged it."""
        ...

    async def interrupt(self) -> None:
        """Ask the provider to stop the running turn."""
        ...

    async def close(self) -> None:
        """Stop the provider process and release its resources. Idempotent."""
        ...


@dataclass(frozen=True, slots=True)
class DriverContext:
    """What the runner gives a driver factory."""

    state_dir: str
    """A private, writable directory for this run's provider state (homes, config files)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for the provider process."""
    command: tuple[str, ...] = ()
    """The command line the runner allows for this run (hook API 1.2): the launch
    profile the agent selected, resolved by the runner. A driver starts this and
    never a command taken from the agent's config. Empty from a runner older than 1.2."""
    report_session: Callable[[str], Awaitable[None]] | None = None
    """Call it as soon as the provider session exists (hook API 1.3), with its
    reference (a Codex thread id): the runner records it durably, so a turn lost
    with its process resumes this session instead of starting over."""
    report_usage: Callable[[TurnUsage], Awaitable[None]] | None = None
    """Call it with each model response's usage as soon as the provider reports it (hook API
    1.8): the control plane records it once (by :attr:`TurnUsage.key`), prices it and holds
    it against the budgets; a run over its budget is stopped at its next tool call. None from
    a runner older than 1.8: report nothing."""
    process_env: Mapping[str, str] | None = None
    """The whole environment to start the provider process with (hook API 1.9): built by
    the runner from an allowlist (``PATH``, ``HOME``, ``LANG``, ``TZ``, ...), the model
    profile's key variable the agent uses, and :attr:`env`. Add only the provider's own
    variables (its home, the MCP token) and never read ``os.environ``. None from a runner
    older than 1.9: start from the runner's environment without its ``PAPERCLIP_*``."""
    user: ProcessUser | None = None
    """Start every provider process as this user (hook API 1.9): pass its ids to
    ``asyncio.create_subprocess_exec(user=..., group=..., extra_groups=[])``. Its
    folders (:attr:`state_dir`, the worktree) are its own. None: the runner's own user."""


@dataclass(frozen=True, slots=True)
class ProviderProbe:
    """What ``paperclip doctor`` reports about a provider's CLI on this machine (hook API 1.2)."""

    found: bool
    version: str | None = None
    path: str | None = None
    """Where the executable was found."""
    hint: str = ""
    """What to do when it is missing or unusable (how to install it, which setting to check)."""


@dataclass(frozen=True, slots=True)
class ProviderKind:
    """A registered provider kind."""

    name: str
    capabilities: ProviderCapabilities
    create_driver: Callable[[DriverContext], ProviderDriver]
    description: str = ""
    config_schema: Mapping[str, Any] | None = None
    """JSON Schema (2020-12) of the agent's provider config (hook API 1.2). The control
    plane refuses a config that does not match it when the agent is created or
    changed (422 naming the field). None: any JSON object."""
    launch: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """The launch profiles this kind offers by default, by name (hook API 1.2), e.g.
    ``{"default": ("codex", "app-server")}``. A runner host may replace them."""
    probe: Callable[[Sequence[str]], ProviderProbe] | None = None
    """Given a launch command, whether its executable is installed and its version
    (hook API 1.2); ``paperclip doctor`` calls it. Must not start a session."""
    model_access: Callable[[Mapping[str, Any]], ModelAccess] | None = None
    """Given an agent's provider config, the endpoints, key variables, sandbox and approval
    answers it asks for (hook API 1.9). The control plane and the runner check them against
    the runner host's model profile. None: read from the conventional keys ``base_url``,
    ``env_key``, ``sandbox`` and ``approvals``. Raise ``ValueError`` for a config it cannot read."""


@hookspec
def paperclip_providers() -> list[ProviderKind]:  # type: ignore[empty-body]
    """Register provider kinds.

    Returns a list of :class:`ProviderKind`; the host flattens the lists of all
    plugins and refuses two kinds with the same name, naming both plugins.
    """
