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

Since hook API 1.8 a guard also sees what the run did (``check.run``, a
:class:`~paperclip_hookspecs.runs.RunView`): the comments it posted, its tool
calls with their results, and its wake snapshot. A guard decides from its
argument alone; it holds no database session and never calls the HTTP API.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from paperclip_hookspecs._markers import hookspec
from paperclip_hookspecs.runs import RunBinding as RunBinding
from paperclip_hookspecs.runs import RunView
from paperclip_hookspecs.runs import WakeSnapshot as WakeSnapshot

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
    run: RunView | None = None
    """What the run did so far (hook API 1.8): its comments, its tool calls with their
    results (at the feedback stage the ``finish`` being checked is the last, pending), its
    wake snapshot. Always set by the core; None only where a test builds a check without one."""


@dataclass(frozen=True, slots=True)
class CompletionCorrection:
    """What the model can do now, in the same turn, to have its report accepted."""

    instruction: str
    """The name of a tool the model has, to call before it reports again: a core tool
    (``read_current_wake_comments``, ``post_comment``, ...) or a plugin tool. The core
    passes it to the model as it is (cut to 100 characters) and does not check it."""
    message: str
    """One or two sentences for the model; bounded, no source text."""
    cursor: str | None = None
    """For ``read_current_wake_comments``: continue reading from this cursor; None: from
    the first page. Other instructions leave it None."""
    restart: bool = False
    """For ``read_current_wake_comments``: the snapshot changed since the reading started,
    read it again from the first page."""


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
