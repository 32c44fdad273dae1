"""Built-in presentation rule, shared by the live path and restart recovery."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.presentation import (
    COMMITTED_CONVERSATION_INTERACTION_PRESENTED,
    CONVERSATION_TURN_FINISHED,
    ConversationTurn,
    PresentationDecision,
)


@hookimpl(trylast=True)
def paperclip_decide_presentation(turn: ConversationTurn) -> PresentationDecision:
    """A finished turn, or a committed one with no pending card of its own, presents its prose."""
    if turn.status_reason == CONVERSATION_TURN_FINISHED:
        return PresentationDecision.answer(CONVERSATION_TURN_FINISHED)
    if turn.pending_cards:
        return PresentationDecision.none(COMMITTED_CONVERSATION_INTERACTION_PRESENTED)
    return PresentationDecision.answer(turn.status_reason)
