"""A succeeded run's answer presented once: the presentation decision, recorded under the run's lock.

The live path asks right after the status decision commits; presentation
recovery asks again for a run whose process died between the two. Either way
the decision is written only where none is, and the reply is unique per run in
the database, so the answer reaches the thread or the chat exactly once.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace

from paperclip_hookspecs.presentation import (
    COMMITTED_CONVERSATION_INTERACTION_PRESENTED,
    ConversationTurn,
    PendingCard,
    PresentationDecision,
    PresentationMode,
    PresentationPath,
    UnpresentedTurn,
)
from paperclip_hookspecs.runs import RunView
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.actor import Actor
from paperclip.domain.chat import chat_turns
from paperclip.domain.issues.comments import add_comment
from paperclip.engine.context.completion import current_snapshot
from paperclip.engine.context.run_view import run_view
from paperclip.engine.context.snapshot import SnapshotBindingError
from paperclip.engine.ownership.fence import RUN_LOCK
from paperclip.models import ConversationState, Run, RunStatus
from paperclip.plugin_host import PluginHost
from paperclip.plugin_host.errors import PluginError

log = logging.getLogger(__name__)

NO_PROSE = "conversation_turn_without_prose"
"""Presentation reason of a successful conversation turn that ended with no final prose."""

ANSWER_NAMESPACE = uuid.UUID("0f1c6a43-7d52-4d57-9a3e-5b1d1c0a9e01")
"""Names the comment that presents a run's answer: one per run, by primary key."""


def answer_comment_id(run_id: uuid.UUID) -> uuid.UUID:
    return uuid.uuid5(ANSWER_NAMESPACE, str(run_id))


class Presenter:
    """Records a run's presentation decision exactly once (the live path and recovery alike)."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], plugins: PluginHost) -> None:
        self.sessions = sessions
        self.plugins = plugins

    async def present(
        self,
        run_id: uuid.UUID,
        path: PresentationPath,
    ) -> bool:
        """Ask the presentation decision for a succeeded run's answer and record it, once.

        With ``answer`` the final prose is posted: to its conversation for a chat
        turn, else to the task's thread as the agent's comment. The decision is
        written only where none is, under the run's row lock, and the reply is
        unique per run in the database: a second caller (a replay, another
        replica, recovery) posts nothing. On the recovery path the recovery
        policy (``paperclip_accept_unpresented_turn``) may decline a chat turn that
        is no longer its conversation's unsettled current turn. Returns whether this call recorded the decision.
        """
        async with self.sessions() as session:
            run = await session.get(Run, run_id)
            if run is None or run.status != RunStatus.SUCCEEDED or run.presentation is not None:
                return False
            chat = await chat_turns.chat_turn_of(session, run)
            if chat is not None and path is PresentationPath.RECOVERY:
                facts = await chat_turns.unpresented_facts(session, run, chat)
                if not self._accepts(facts):
                    return False
            cards = await chat_turns.pending_cards(session, run.id) if chat else ()
            turn = _turn_of(run, path, cards)
            if turn is not None:
                turn = replace(turn, run=await self._view(session, run))
        if turn is not None:
            try:
                decision = self.plugins.decide_presentation(turn)
            except PluginError:
                log.exception("the presentation of run %s was not decided", run_id)
                return False
        elif chat is not None:
            # No prose to decide on, yet the conversation turn must settle: nothing is posted.
            decision = PresentationDecision.none(
                COMMITTED_CONVERSATION_INTERACTION_PRESENTED if cards else NO_PROSE
            )
        else:
            return False
        async with self.sessions.begin() as session:
            run = await session.get(Run, run_id, with_for_update=RUN_LOCK, populate_existing=True)
            if run is None or run.presentation is not None:
                return False
            answered = decision.mode is PresentationMode.ANSWER and run.answer
            comment_id = message_id = None
            if chat is not None:
                if answered:
                    message_id = await chat_turns.post_reply(session, chat, run)
                # Presented by its own card, it waits for the person; else it is over.
                waits = not answered and bool(cards)
                settled = ConversationState.WAITING if waits else ConversationState.IDLE
                await chat_turns.settle(session, chat, settled)
            elif answered and run.issue_id is not None:
                actor = Actor(
                    type="agent", id=str(run.agent_id), company_id=run.company_id, run_id=run.id
                )
                comment = await add_comment(
                    session,
                    actor,
                    run.company_id,
                    run.issue_id,
                    body=run.answer,
                    command_id=answer_comment_id(run.id),
                )
                comment_id = str(comment.id)
            run.presentation = {
                "presentationDecision": decision.mode.value,
                "reason": decision.reason,
                "comment_id": comment_id,
                **({"message_id": str(message_id) if message_id else None} if chat else {}),
            }
        return True

    @staticmethod
    async def _view(session: AsyncSession, run: Run) -> RunView:
        """What the run did, for the presentation hook (its snapshot only when it is the run's)."""
        try:
            snapshot, _ = await current_snapshot(session, run)
        except SnapshotBindingError:
            snapshot = None
        return await run_view(session, run, snapshot)

    def _accepts(self, facts: UnpresentedTurn) -> bool:
        try:
            return self.plugins.accept_unpresented_turn(facts)
        except PluginError:
            log.exception("the recovery policy failed on run %s", facts.run_id)
            return False


def _turn_of(
    run: Run, path: PresentationPath, cards: tuple[PendingCard, ...] = ()
) -> ConversationTurn | None:
    """The run's turn as the presentation hook sees it; None when there is no prose to present."""
    if not run.answer:
        return None
    outcome = (run.result or {}).get("outcome")
    return ConversationTurn(
        run_id=str(run.id),
        company_id=str(run.company_id),
        issue_id=str(run.issue_id or ""),
        turn_id=str(run.id),
        status_reason=run.status_reason or "",
        result="done" if outcome == "done" else "yielded",
        answer=run.answer,
        pending_cards=cards,
        path=path,
    )
