"""Prompt rendering: the task brief, the wake prompt, and who owns each source.

A run's prompt is assembled from sections (bootstrap, rules, agent
instructions, task markdown, earlier thread, continuation, wake prompt, wake
JSON). These hooks decide what each section says and which sections a given
session attempt receives. The core ships the default rendering as a built-in
plugin registered with ``trylast=True``; every hook here is ``firstresult``, so
an installed plugin that returns a value takes over that decision and one that
returns ``None`` leaves it to the next plugin (in the end, the built-in).

Ownership (``paperclipTurnContext``): the task description is owned by the task
markdown and each current comment by the wake prompt. A source's revision is
the sha256 of its trimmed, sanitized text. A renderer reports every source it
rendered as a :class:`SourceBlock`; completion references are valid only for
rendered blocks, never for text that merely looks like a source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from paperclip_hookspecs._markers import hookspec
from paperclip_hookspecs.org_chart import ChainOfCommand
from paperclip_hookspecs.runs import RunView
from paperclip_hookspecs.workspaces import ExecutionWorkspace

# -- vocabulary ------------------------------------------------------------------------


class Lane(StrEnum):
    """A way a run reaches a model; each selects its sections for the attempt it dispatches."""

    LEGACY_CLI = "legacy_cli"
    ACP = "acp"
    CLOUD = "cloud"
    GATEWAY = "gateway"
    NATIVE = "native"


class SessionAttempt(StrEnum):
    """The kind of provider session attempt a prompt is assembled for."""

    FRESH = "fresh"
    """A new session: full brief, history, bootstrap and instructions."""
    RESUMED = "resumed"
    """An existing session continues: it receives the delta only."""
    FRESH_RETRY = "fresh_retry"
    """The resume failed and recovery permitted a fresh session: the full brief again."""


class CommentTrust(StrEnum):
    """Whether a comment may direct the work (decided by the core from its author)."""

    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"


class AuthorKind(StrEnum):
    """Who wrote a comment."""

    USER = "user"
    AGENT = "agent"
    SYSTEM = "system"


class TaskMarkdownMode(StrEnum):
    """How much of the task brief an attempt receives."""

    FULL = "full"
    COMPACT = "compact"
    """A resumed session's brief: header, changed fields and criteria, no unchanged body."""
    OMIT = "omit"


class Placement(StrEnum):
    """Where a block of rules goes."""

    USER_PROMPT = "user_prompt"
    SYSTEM_CARRIER = "system_carrier"
    """A carrier outside the user prompt (Pi's system extension, a gateway's execution contract)."""
    OMIT = "omit"


class SourceKind(StrEnum):
    """What a source block or completion reference points to."""

    TASK = "task"
    DESCRIPTION = "description"
    COMMENT = "comment"


TASK_MARKDOWN_OWNER: Literal["task_markdown"] = "task_markdown"
WAKE_PROMPT_OWNER: Literal["wake_prompt"] = "wake_prompt"
TURN_CONTEXT_VERSION = 1


# -- sources -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParentTask:
    """The issue a task belongs under, as shown in the brief."""

    id: str
    identifier: str
    title: str
    goal: str = ""
    """The parent's description: what the whole is for (hook API 1.11; the core cuts it)."""


@dataclass(frozen=True, slots=True)
class TaskSource:
    """The issue as the prompt sees it: the assignment."""

    id: str
    identifier: str
    title: str
    description: str = ""
    status: str = ""
    priority: str = ""
    parent: ParentTask | None = None
    acceptance_criteria: tuple[str, ...] = ()
    workspace: ExecutionWorkspace | None = None
    """The git worktree the task's runs work in (hook API 1.8); None: a scratch folder."""
    chain: ChainOfCommand | None = None
    """The assigned agent's manager and reports (hook API 1.11); None: not told."""


@dataclass(frozen=True, slots=True)
class CommentAuthor:
    """A comment's author; ``name`` is optional display text."""

    kind: AuthorKind
    id: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file attached to a comment; the prompt lists it, the model fetches it with a tool."""

    id: str
    name: str
    content_type: str = ""
    size_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class CommentSource:
    """A comment on the issue: an event."""

    id: str
    issue_id: str
    body: str
    author: CommentAuthor
    trust: CommentTrust = CommentTrust.UNTRUSTED
    created_at: str = ""
    """ISO 8601, as stored."""
    attachments: tuple[Attachment, ...] = ()
    edited: bool = False
    deleted: bool = False
    """Deleted after the wake: listed as a tombstone, never rendered or owned."""


@dataclass(frozen=True, slots=True)
class WakeSource:
    """Why the agent was woken and the current comments of the wake, oldest first."""

    reason: str
    comments: tuple[CommentSource, ...] = ()
    omitted_count: int = 0
    """Comments of this wake that are not included (window or load failure)."""


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """Bounds on what one prompt carries; past them, the prompt says what it left out."""

    max_inline_comments: int = 100
    max_comment_chars: int = 8_000
    max_description_chars: int = 20_000
    max_history_comments: int = 20
    max_continuation_messages: int = 50
    max_parent_goal_chars: int = 2_000
    """The parent issue's goal in a part's brief (hook API 1.11)."""


# -- ownership --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceRef:
    """A source and the revision of its exact text: sha256 of the trimmed, sanitized text."""

    id: str
    revision: str


@dataclass(frozen=True, slots=True)
class AssignmentOwnership:
    """``paperclipTurnContext.assignment``: the description is owned by the task markdown."""

    description: SourceRef | None
    """None when the issue has no description."""
    owner: Literal["task_markdown"] = TASK_MARKDOWN_OWNER


@dataclass(frozen=True, slots=True)
class EventsOwnership:
    """``paperclipTurnContext.events``: the current comments are owned by the wake prompt."""

    comments: tuple[SourceRef, ...]
    """The current comments, in order; distinct ids stay distinct even when bodies match."""
    owner: Literal["wake_prompt"] = WAKE_PROMPT_OWNER


@dataclass(frozen=True, slots=True)
class TurnContext:
    """``paperclipTurnContext``: which section owns each source of this run."""

    assignment: AssignmentOwnership
    events: EventsOwnership
    version: int = TURN_CONTEXT_VERSION


@dataclass(frozen=True, slots=True)
class SourceBlock:
    """Evidence that a source's text was rendered into the model's prompt, and where."""

    kind: SourceKind
    id: str
    revision: str | None
    """None for the task itself (its header is not a text source)."""
    section: str
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class RenderedSection:
    """One rendered prompt section and the sources it carries."""

    name: str
    text: str
    sources: tuple[SourceBlock, ...] = ()
    truncated: bool = False


# -- section selection ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProviderCarriers:
    """Places a provider carries Paperclip text outside the user prompt."""

    default_rules: bool = False
    """The default Paperclip rules travel elsewhere (Pi: its system extension)."""
    execution_contract: bool = False
    """A separate execution-contract carrier (a gateway): rules and wake copy travel there."""


@dataclass(frozen=True, slots=True)
class SectionRequest:
    """The attempt a prompt is selected for: the same attempt that is dispatched."""

    lane: Lane
    attempt: SessionAttempt
    owned: bool
    """A turn context says the wake prompt owns the current comments."""
    provider: str = ""
    carriers: ProviderCarriers = field(default_factory=ProviderCarriers)
    custom_template: bool = False
    has_continuation: bool = False


@dataclass(frozen=True, slots=True)
class SectionSelection:
    """Which sections an attempt receives, and where the rules go."""

    bootstrap: bool
    default_rules: Placement
    instructions: bool
    task_markdown: TaskMarkdownMode
    assignment_only: bool
    """The task markdown leaves current comments to the wake prompt."""
    history: bool
    continuation: bool
    wake_prompt: bool
    wake_rules: Placement
    wake_json: bool
    """Append the structured wake JSON (automatic lanes that need it, when nothing owns events)."""
    custom_template: bool = False


# -- options passed to renderers ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskMarkdownOptions:
    """How to render the task brief for this attempt."""

    mode: TaskMarkdownMode = TaskMarkdownMode.FULL
    assignment_only: bool = False
    """False (the standalone default): also render the latest wake comment, as historically."""
    wake_comments: tuple[CommentSource, ...] = ()
    previous_description_revision: str | None = None
    """The description revision the resumed session already has; compact mode skips it if equal."""
    limits: RenderLimits = field(default_factory=RenderLimits)


@dataclass(frozen=True, slots=True)
class WakePromptOptions:
    """How to render the wake prompt for this attempt."""

    resumed: bool = False
    rules: bool = True
    """Carry the wake-handling rules here (False: they travel in another carrier or the session)."""
    suppressed_comment_ids: frozenset[str] = frozenset()
    """Current comments already rendered, unchanged, by the continuation."""
    limits: RenderLimits = field(default_factory=RenderLimits)


# -- continuation ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContinuationMessage:
    """A thread message selected into a resumed session's continuation (the resume delta)."""

    id: str
    issue_id: str
    body: str
    author: CommentAuthor | None = None
    trust: CommentTrust = CommentTrust.UNTRUSTED
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class ObjectiveSource:
    """``objectiveSource``: where the continuation's objective came from."""

    kind: Literal["comment", "description", "title"]
    id: str
    """A comment id, or the issue id for a description or title."""
    revision: str


@dataclass(frozen=True, slots=True)
class Continuation:
    """``executionContinuation``: a resumed session's delta and its current objective."""

    issue_id: str
    messages: tuple[ContinuationMessage, ...]
    objective: str
    objective_source: ObjectiveSource | None = None
    """None for older envelopes: the objective is then always shown in full."""


@dataclass(frozen=True, slots=True)
class ContinuationOptions:
    """What the rest of this prompt shows, for deciding how to render the objective."""

    description_displayed: bool = False
    """The task markdown of this prompt shows the current description in full."""
    task_displayed: bool = False
    """The task markdown of this prompt shows the issue header (and so the title)."""
    brief_truncated: bool = False
    limits: RenderLimits = field(default_factory=RenderLimits)


@dataclass(frozen=True, slots=True)
class RenderedContinuation:
    """A rendered continuation and the current comments it already shows."""

    section: RenderedSection
    suppressed_comment_ids: frozenset[str] = frozenset()
    """Current comments the wake prompt need not repeat."""
    objective_referenced: bool = False
    """The objective points at a displayed source instead of repeating it."""


# -- completion references ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompletionReference:
    """A source a completion report points to."""

    kind: SourceKind
    id: str
    revision: str | None = None


@dataclass(frozen=True, slots=True)
class RefusedReference:
    """A completion reference that was refused, and why."""

    reference: CompletionReference
    reason: Literal["not_rendered", "stale_revision", "missing_revision"]


@dataclass(frozen=True, slots=True)
class ReferenceCheck:
    """The answer to a completion reference check."""

    accepted: tuple[CompletionReference, ...] = ()
    refused: tuple[RefusedReference, ...] = ()

    @property
    def ok(self) -> bool:
        """Every reference was accepted."""
        return not self.refused


# -- hooks -------------------------------------------------------------------------------


@hookspec(firstresult=True)
def paperclip_render_task_markdown(
    task: TaskSource, options: TaskMarkdownOptions
) -> RenderedSection | None:
    """Render the task brief (title, status, parent, description, acceptance criteria).

    With ``options.assignment_only`` false (the standalone default) the latest
    wake comment is rendered too, as callers without ownership metadata expect.
    Return a :class:`RenderedSection` whose ``sources`` name the task and, when
    its body was rendered, the description (and that comment); or ``None`` to
    leave the decision to the next plugin.
    """


@hookspec(firstresult=True)
def paperclip_render_wake_prompt(
    wake: WakeSource, task: TaskSource, options: WakePromptOptions
) -> RenderedSection | None:
    """Render the structured wake prompt: the current comments with their trust,
    author, attachments, omissions, ordering and follow-up rules.

    ``wake.comments`` are already normalized by the core (deduplicated, ordered,
    windowed). Comments named in ``options.suppressed_comment_ids`` were
    rendered unchanged by the continuation: refer to them instead of repeating
    them. Report one :class:`SourceBlock` per comment body rendered.
    """


@hookspec(firstresult=True)
def paperclip_build_turn_context(task: TaskSource, wake: WakeSource) -> TurnContext | None:
    """Build ``paperclipTurnContext``: the description owned by the task markdown,
    the ordered current comments owned by the wake prompt, each with its revision.
    """


@hookspec(firstresult=True)
def paperclip_select_prompt_sections(
    request: SectionRequest,
) -> SectionSelection | None:
    """Select the sections for the session attempt that is dispatched.

    A provider plugin answers for its own provider (``request.provider``) and
    returns ``None`` otherwise.
    """


@hookspec(firstresult=True)
def paperclip_render_continuation(
    continuation: Continuation,
    task: TaskSource,
    comments: tuple[CommentSource, ...],
    options: ContinuationOptions,
) -> RenderedContinuation | None:
    """Render a resumed session's continuation and say which current comments it covers.

    A current comment is covered only when the continuation is for the same
    issue, its id is in the rendered selection, and the trimmed body matches.
    """


@hookspec(firstresult=True)
def paperclip_validate_completion_references(
    references: tuple[CompletionReference, ...], rendered: tuple[SourceBlock, ...]
) -> ReferenceCheck | None:
    """Accept the completion references whose source block was rendered; refuse the rest."""


@hookspec(firstresult=True)
def paperclip_render_completion_recovery(task: TaskSource, run: RunView) -> RenderedSection | None:
    """Render the prompt of a completion-only recovery: the report nudge (hook API 1.10).

    Called when a run's turn ended without an accepted ``finish`` or ``block``
    report and the run may still be nudged: the same provider session gets one
    short follow-up turn with this prompt. ``task`` is the issue as it is now
    (its current criteria), ``run`` what the run did so far (its comments and
    journaled tool calls). The section says that no report was recorded, what
    the run has done, and asks for the report. It replaces the task prompt for
    that turn: report only :class:`SourceKind.TASK` as its source (seed 001:
    source references are removed when the task prompt is replaced; nothing is
    inferred from text).
    """
