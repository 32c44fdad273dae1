"""Built-in presentation rule, shared by the live path and restart recovery."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.presentation import (
    COMMITTED_CONVERSATION_INTERACTION_PRESENTED,
    CONVERSATION_TURN_FINISHED,
    ConversationTurn,
    PresentationDecision,
)


def conversation_turn_answered(turn: ConversationTurn) -> bool:
    """A committed status decision with no pending card of the turn: the prose answers."""
    return not turn.pending_cards


def conversation_turn_presents_answer(turn: ConversationTurn) -> bool:
    """The one rule: is a successful conversation turn's prose its answer?"""
    return turn.status_reason == CONVERSATION_TURN_FINISHED or conversation_turn_answered(turn)


@hookimpl(trylast=True)
def paperclip_decide_presentation(turn: ConversationTurn) -> PresentationDecision:
    """A finished turn, or a committed one with no pending card of its own, presents its prose;
    a turn its own card presents posts nothing."""
    if conversation_turn_presents_answer(turn):
        return PresentationDecision.answer(turn.status_reason)
    return PresentationDecision.none(COMMITTED_CONVERSATION_INTERACTION_PRESENTED)
