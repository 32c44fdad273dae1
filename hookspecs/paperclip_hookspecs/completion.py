"""Completion guards: whether a run's completion report is accepted now.

The model reports completion through the server-owned finish tool. Before the
report is accepted, every guard is asked through ``paperclip_check_completion``;
the first refusal stops it. At the ``feedback`` stage (inside the turn) a
refusal carries a bounded correction the model can act on in the same turn,
such as ``read_current_wake_comments`` with the cursor to continue from. After
the provider ends its turn, the same guards run again at the ``terminal``
stage against the exact wake snapshot; a refusal then fails the run with its
code (``native_current_wake_comments_unread``).

The core ships the current-wake-comments guard as a built-in plugin registered
with ``trylast=True``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from paperclip_hookspecs._markers import hookspec

READ_CURRENT_WAKE_COMMENTS = "read_current_wake_comments"
"""The correction: read the current wake comments (the tool of that name), then report again."""
NATIVE_CURRENT_WAKE_COMMENTS_UNREAD = "native_current_wake_comments_unread"
"""Refusal code: the run has not read every current wake comment of its exact snapshot."""


class CompletionStage(StrEnum):
    FEEDBACK = "feedback"
    """The finish tool's answer, inside the turn: the model can still correct the report."""
    TERMINAL = "terminal"
    """After the provider ended its turn: a refusal fails the run."""


@dataclass(frozen=True, slots=True)
class RunBinding:
    """The run a report or a read receipt belongs to; anything else's is foreign."""

    run_id: str
    company_id: str
    issue_id: str
    agent_id: str


@dataclass(frozen=True, slots=True)
class WakeSnapshot:
    """The exact accepted comments a run was woken for (its current wake comments)."""

    revision: str
    """Revision of the snapshot as a whole: it changes when a comment is added, edited or removed."""
    comment_ids: tuple[str, ...]
    read_required: bool
    """The wake did not carry every comment in full (a truncated wake): a complete
    run-bound read is required before completion."""


@dataclass(frozen=True, slots=True)
class ReadReceipt:
    """Proof of how far a run read its current wake comments."""

    binding: RunBinding
    snapshot_revision: str
    """The snapshot the reading started on."""
    complete: bool
    """Every page was read."""
    cursor: str | None = None
    """The cursor of the most recent page read: a partial read continues from it."""


@dataclass(frozen=True, slots=True)
class CompletionReport:
    """What the model reported through the finish tool."""

    status: str
    summary: str = ""


@dataclass(frozen=True, slots=True)
class CompletionCheck:
    """Everything a guard may look at, read by the core in one transaction."""

    stage: CompletionStage
    binding: RunBinding
    report: CompletionReport
    snapshot: WakeSnapshot | None = None
    """None when the run was not woken by comments."""
    receipt: ReadReceipt | None = None
    """The run's latest read receipt for its current wake comments, if any."""


@dataclass(frozen=True, slots=True)
class CompletionCorrection:
    """What the model can do now, in the same turn, to have its report accepted."""

    instruction: str
    """The tool to call, e.g. ``read_current_wake_comments``."""
    message: str
    """One or two sentences for the model; bounded, no source text."""
    cursor: str | None = None
    """Continue reading from this cursor; None: from the first page."""
    restart: bool = False
    """The snapshot changed since the reading started: read it again from the first page."""


@dataclass(frozen=True, slots=True)
class CompletionRefusal:
    """A guard's refusal of a completion report."""

    code: str
    reason: str
    """Why, in a word the core can count: ``unread``, ``partial``, ``changed_snapshot``,
    ``foreign`` for the built-in guard; a plugin's guard uses its own words."""
    message: str
    correction: CompletionCorrection | None = None
    """What the model can do about it; used at the feedback stage."""


@hookspec(firstresult=True)
def paperclip_check_completion(check: CompletionCheck) -> CompletionRefusal | None:
    """Refuse a completion report, or let it through to the next guard.

    Return a :class:`CompletionRefusal` to refuse (the first refusal stops the
    check), or ``None`` when this guard has no objection; a report no guard
    refuses is accepted. The same guards run at both stages; ``check.stage``
    says which.
    """
