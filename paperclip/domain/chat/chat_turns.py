"""The rules of a conversation turn's end: its status decision, its cards, its reply.

Called inside the run's transactions (``paperclip.engine.endings.turn_end``): the status
decision commits first, the presentation after it. A turn is the run of a wake a
chat message requested (``conversation_turns``, keyed by the wake).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from paperclip_hookspecs.presentation import (
    CONVERSATION_TURN_FINISHED,
    GOVERNED_RESPONSE_WAITING,
    PendingCard,
    UnpresentedTurn,
)
from sqlalchemy import exists, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.domain.issues.issues import ISSUE_LOCK
from paperclip.models import (
    ACTIVE_RUN_STATUSES,
    CARD_KINDS,
    HOLDING_STATUSES,
    Conversation,
    ConversationMessage,
    ConversationState,
    ConversationTurnRecord,
    Interaction,
    InteractionStatus,
    Issue,
    IssueStatus,
    Run,
)


@dataclass(frozen=True, slots=True)
class ChatTurn:
    conversation: Conversation
    record: ConversationTurnRecord

    @property
    def is_current(self) -> bool:
        return self.conversation.current_wake_id == self.record.wake_request_id


async def chat_turn_of(session: AsyncSession, run: Run) -> ChatTurn | None:
    """The conversation turn ``run`` is, or None (not a chat turn)."""
    if run.wake_request_id is None:
        return None
    row = (
        await session.execute(
            select(ConversationTurnRecord, Conversation)
            .join(Conversation, Conversation.id == ConversationTurnRecord.conversation_id)
            .where(
                ConversationTurnRecord.wake_request_id == run.wake_request_id,
                ConversationTurnRecord.company_id == run.company_id,
            )
        )
    ).first()
    return None if row is None else ChatTurn(conversation=row[1], record=row[0])


async def holds_task(session: AsyncSession, company_id: uuid.UUID, issue_id: uuid.UUID) -> bool:
    """Is the task held by an interaction (a pending card or approval, a revision asked for,
    an execution stage, a dependency blocker)?"""
    return bool(
        await session.scalar(
            select(
                exists().where(
                    Interaction.company_id == company_id,
                    Interaction.issue_id == issue_id,
                    Interaction.status.in_(HOLDING_STATUSES),
                )
            )
        )
    )


async def commit_status_decision(session: AsyncSession, run: Run) -> str:
    """The status decision of a successful chat turn (the caller holds the run's lock).

    A task held by an interaction waits for it (``governed_response_waiting``, the
    task ``in_review``); otherwise the turn finished its reply and the task stays
    ``in_progress`` (``conversation_turn_finished``). Returns the reason.
    """
    assert run.issue_id is not None
    issue = await session.get(Issue, run.issue_id, with_for_update=ISSUE_LOCK)
    if await holds_task(session, run.company_id, run.issue_id):
        if issue is not None:
            issue.status = IssueStatus.IN_REVIEW
        return GOVERNED_RESPONSE_WAITING
    if issue is not None and issue.status not in (IssueStatus.DONE, IssueStatus.CANCELLED):
        issue.status = IssueStatus.IN_PROGRESS
    return CONVERSATION_TURN_FINISHED


async def pending_cards(session: AsyncSession, run_id: uuid.UUID) -> tuple[PendingCard, ...]:
    """The turn's own question and confirmation cards that are still pending."""
    rows = await session.execute(
        select(Interaction.id, Interaction.kind).where(
            Interaction.run_id == run_id,
            Interaction.kind.in_(CARD_KINDS),
            Interaction.status == InteractionStatus.PENDING,
        )
    )
    return tuple(PendingCard(id=str(i), kind=k) for i, k in rows)


async def post_reply(session: AsyncSession, turn: ChatTurn, run: Run) -> uuid.UUID | None:
    """The turn's answer as the agent's message, once: the unique reply index refuses a
    second one (a replay, another replica). The id of the message this call posted."""
    posted = await session.execute(
        insert(ConversationMessage)
        .values(
            id=uuid.uuid4(),
            company_id=run.company_id,
            conversation_id=turn.conversation.id,
            role="agent",
            author_ref=f"agent:{run.agent_id}",
            body=run.answer,
            run_id=run.id,
            delivery="",
        )
        .on_conflict_do_nothing(
            index_elements=[ConversationMessage.run_id],
            index_where=ConversationMessage.run_id.is_not(None),
        )
        .returning(ConversationMessage.id)
    )
    return posted.scalar_one_or_none()


async def settle(session: AsyncSession, turn: ChatTurn, state: ConversationState) -> None:
    """The turn is settled: its conversation goes to ``state`` if it is still its current turn."""
    await session.execute(
        update(Conversation)
        .where(
            Conversation.id == turn.conversation.id,
            Conversation.current_wake_id == turn.record.wake_request_id,
            Conversation.state == ConversationState.ACTIVE,
        )
        .values(state=state)
    )


async def unpresented_facts(session: AsyncSession, run: Run, turn: ChatTurn) -> UnpresentedTurn:
    """What presentation recovery's policy needs to know of a committed chat turn."""
    conversation = turn.conversation
    issue_status = await session.scalar(select(Issue.status).where(Issue.id == run.issue_id))
    other = await session.scalar(
        select(
            exists().where(
                Run.issue_id == run.issue_id,
                Run.id != run.id,
                Run.status.in_(ACTIVE_RUN_STATUSES),
            )
        )
    )
    return UnpresentedTurn(
        run_id=str(run.id),
        status_reason=run.status_reason or "",
        result=str((run.result or {}).get("outcome") or ""),
        issue_status=str(issue_status or ""),
        conversation_state=conversation.state,
        is_current_turn=turn.is_current,
        same_agent=conversation.agent_id == run.agent_id == turn.record.agent_id,
        same_user=conversation.user_ref == turn.record.user_ref,
        same_session_generation=conversation.session_generation == turn.record.session_generation,
        other_execution_run=bool(other),
    )
