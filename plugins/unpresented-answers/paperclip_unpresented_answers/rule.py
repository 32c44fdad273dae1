"""Which committed conversation turns presentation recovery may present.

The same answered rule as the live path applies (``paperclip_decide_presentation``);
this rule only tells the unsettled current turn from a stale or superseded one.
"""

from __future__ import annotations

from paperclip_hookspecs.presentation import CONVERSATION_TURN_FINISHED, UnpresentedTurn

ACCEPTED_RESULTS = frozenset({"done", "yielded"})
"""A held turn may end ``yielded`` (its task waits on a card, an approval, a stage)."""


def is_unsettled_current_turn(turn: UnpresentedTurn) -> bool:
    """Still the conversation's current turn, of the same agent, person and session
    generation, the conversation active, and no other run of the task executing."""
    return (
        turn.is_current_turn
        and turn.same_agent
        and turn.same_user
        and turn.same_session_generation
        and turn.conversation_state == "active"
        and not turn.other_execution_run
    )


def accepts(turn: UnpresentedTurn) -> bool:
    """Recovery presents ``turn``: a successful (``done`` or ``yielded``) unsettled current
    turn; a ``conversation_turn_finished`` one also needs its task still ``in_progress``
    (a held turn keeps whatever status its gate committed)."""
    if turn.result not in ACCEPTED_RESULTS or not is_unsettled_current_turn(turn):
        return False
    if turn.status_reason == CONVERSATION_TURN_FINISHED:
        return turn.issue_status == "in_progress"
    return True
