"""Presentation decisions: whether a finished conversation turn's prose is its answer.

In an agent chat each user message starts a conversation turn; its final prose
is the reply. After the turn's status decision commits, the live path asks
``paperclip_decide_presentation`` and records the decision once; restart
recovery asks the same question of a committed turn whose decision was never
recorded, so the answer reaches the chat exactly once either way.

The core ships the rule as a built-in plugin registered with ``trylast=True``:
the prose presents the answer when the turn finished as a conversation turn
(``conversation_turn_finished``), or when its status decision committed and
no card of the turn is pending. When the turn's own pending card (a question,
confirmation or approval) presents it, nothing is posted and
``presentationDecision: none`` is recorded with the reason
``committed_conversation_interaction_presented``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from paperclip_hookspecs._markers import hookspec
from paperclip_hookspecs.runs import RunView

CONVERSATION_TURN_FINISHED = "conversation_turn_finished"
"""Status decision reason of a conversation turn that finished its reply."""
COMMITTED_CONVERSATION_INTERACTION_PRESENTED = "committed_conversation_interaction_presented"
"""Presentation reason: the turn's own pending card presents it; no answer is posted."""
CONVERSATION_TURN_ANSWERED = "conversation_turn_answered"
"""A committed status decision with no pending card of the turn: its prose is its answer."""
GOVERNED_RESPONSE_WAITING = "governed_response_waiting"
"""Status decision reason of a turn whose task stays held (an approval, a stage, a blocker)."""
YIELDED_CONTROL_PLANE_WAIT = "yielded_control_plane_wait"
"""A presentation reason an earlier release recorded for a held turn: kept, never re-presented."""


class PresentationPath(StrEnum):
    LIVE = "live"
    """Run completion, right after the status decision committed."""
    RECOVERY = "recovery"
    """Presentation recovery after a restart, for a committed turn with no recorded decision."""


@dataclass(frozen=True, slots=True)
class PendingCard:
    """An interaction the turn raised in the thread that is still pending."""

    id: str
    kind: str
    """``question``, ``confirmation``, ``approval``, ..."""


@dataclass(frozen=True, slots=True)
class ConversationTurn:
    """A successful conversation turn whose status decision has committed."""

    run_id: str
    company_id: str
    issue_id: str
    turn_id: str
    status_reason: str
    """The committed status decision's reason (``conversation_turn_finished``,
    ``governed_response_waiting``, ...)."""
    result: Literal["done", "yielded"]
    answer: str
    """The turn's final prose."""
    pending_cards: tuple[PendingCard, ...] = ()
    """The turn's own cards that are still pending (cards of other turns are not listed)."""
    path: PresentationPath = PresentationPath.LIVE
    run: RunView | None = None
    """What the run did (hook API 1.8): its comments, its tool calls with their results,
    its wake snapshot. Set by the core; None only where a test builds a turn without one."""


class PresentationMode(StrEnum):
    """``presentationDecision``: what the chat shows for the turn."""

    ANSWER = "answer"
    """Post the turn's prose to the chat as its answer."""
    NONE = "none"
    """Post nothing; something else presents the turn (its reason says what)."""


@dataclass(frozen=True, slots=True)
class PresentationDecision:
    """Recorded once per turn; the answer is posted only with ``ANSWER``."""

    mode: PresentationMode
    reason: str

    @classmethod
    def answer(cls, reason: str) -> PresentationDecision:
        return cls(PresentationMode.ANSWER, reason)

    @classmethod
    def none(cls, reason: str) -> PresentationDecision:
        return cls(PresentationMode.NONE, reason)


@hookspec(firstresult=True)
def paperclip_decide_presentation(turn: ConversationTurn) -> PresentationDecision | None:
    """Decide whether a finished conversation turn's prose is its answer.

    Return a :class:`PresentationDecision`, or ``None`` to leave the turn to
    the next plugin (in the end, the built-in rule). The live path and restart
    recovery both ask, so a decision must depend only on ``turn``.
    """


@dataclass(frozen=True, slots=True)
class UnpresentedTurn:
    """A committed conversation turn presentation recovery found with no decision (hook API 1.7).

    The facts recovery needs to tell the unsettled current turn of its
    conversation from a stale or superseded one.
    """

    run_id: str
    status_reason: str
    """The committed status decision's reason."""
    result: str
    """The outcome the turn reported through ``finish`` (``done``, ``yielded``, ...)."""
    issue_status: str
    """The task's status now (``in_progress``, ``in_review``, ...)."""
    conversation_state: str
    """``active`` while the turn is unsettled; ``idle``/``waiting`` once settled."""
    is_current_turn: bool
    """The conversation's current turn is this run."""
    same_agent: bool
    """The conversation's agent ran the turn."""
    same_user: bool
    """The turn answers the conversation's person."""
    same_session_generation: bool
    """The conversation's session generation is the turn's."""
    other_execution_run: bool
    """Another run of the task is queued or running."""


@hookspec(firstresult=True)
def paperclip_accept_unpresented_turn(turn: UnpresentedTurn) -> bool | None:
    """Whether presentation recovery may present (or settle) a committed conversation turn.

    Called only by background presentation recovery, for a conversation turn
    whose status decision committed and whose presentation decision was never
    recorded (the process died in between). Return True to let recovery ask
    ``paperclip_decide_presentation`` and record its answer once, False to
    leave the turn alone, or None to let the next plugin answer. Without any
    answer recovery leaves conversation turns alone.
    """
