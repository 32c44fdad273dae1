"""Agent chat: conversations bound to a task, their messages and turns.

A person's message is written to the task's thread too (the agent reads its
task there), which wakes the agent: the wake is the conversation's new turn
(``conversation_turns``), unless the conversation's current turn is running,
in which case the message steers it, in the same transaction: the message, its
comment and the steer commit together, or none of them does.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import Cursor, get_scoped, keyset_page
from paperclip.domain.companies.companies import company_writes, require_company
from paperclip.domain.issues.comments import IDEMPOTENCY_KEY_REUSED, add_comment
from paperclip.domain.projects.projects import project_on_assignment
from paperclip.errors import ConflictError, ForbiddenError
from paperclip.models import (
    Agent,
    Comment,
    Conversation,
    ConversationMessage,
    ConversationState,
    ConversationTurnRecord,
    Issue,
    Run,
    RunStatus,
    WakeRequest,
    WakeStatus,
)

CHAT_BY_AGENT = "conversation_by_agent_forbidden"
CONVERSATION_CLOSED = "conversation_closed"
AGENT_NOT_ASSIGNEE = "conversation_agent_not_assignee"
CONVERSATION_BUSY = "conversation_busy"


def user_ref(actor: Actor) -> str:
    return f"{actor.type}:{actor.id}"


SteerInto = Callable[[AsyncSession, Run, Comment], Awaitable[object]]
"""Sends a person's comment into a run's live turn in the caller's transaction (the
run's row locked); raises a ``ConflictError`` when it cannot (nothing is then written)."""

POST_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class Posted:
    message: ConversationMessage
    steered: Run | None
    """The run whose live turn the message steered (its runner is told after commit)."""
    replayed: bool = False
    """The idempotency key's first message, found again: nothing was written."""


class ConversationService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def create(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        *,
        issue_id: uuid.UUID,
        agent_id: uuid.UUID,
        title: str,
    ) -> Conversation:
        _person(actor)
        async with company_writes(self.sessions, company_id) as session:
            issue = await get_scoped(
                session, Issue, company_id, issue_id, "issue", for_update=True, field="issue_id"
            )
            agent = await get_scoped(
                session, Agent, company_id, agent_id, "agent", field="agent_id"
            )
            if issue.assignee_agent_id is None:
                issue.assignee_agent_id = agent_id  # the chat's agent takes the task
                # Without a project, it takes the agent's default one, as any assignment does.
                if (project_id := await project_on_assignment(session, issue, agent)) is not None:
                    issue.project_id = project_id
            elif issue.assignee_agent_id != agent_id:
                raise ConflictError(
                    "the task is assigned to another agent; chat with its assignee",
                    code=AGENT_NOT_ASSIGNEE,
                    field="agent_id",
                )
            conversation = Conversation(
                company_id=company_id,
                issue_id=issue_id,
                agent_id=agent_id,
                user_ref=user_ref(actor),
                title=title,
                state=ConversationState.IDLE,
                session_generation=1,
            )
            session.add(conversation)
            await session.flush()
            record_activity(
                session,
                actor,
                "conversation.created",
                entity_type="conversation",
                entity_id=conversation.id,
                company_id=company_id,
                details={"issue_id": str(issue_id), "agent_id": str(agent_id)},
            )
            return conversation

    async def get(self, company_id: uuid.UUID, conversation_id: uuid.UUID) -> Conversation:
        async with self.sessions() as session:
            return await get_scoped(
                session, Conversation, company_id, conversation_id, "conversation", source="path"
            )

    async def list(
        self, company_id: uuid.UUID, *, issue_id: uuid.UUID | None, after: Cursor | None, limit: int
    ) -> tuple[list[Conversation], Cursor | None]:
        async with self.sessions() as session:
            await require_company(session, company_id)  # a company gone is a 404, not a page
            stmt = select(Conversation).where(Conversation.company_id == company_id)
            if issue_id is not None:
                await get_scoped(
                    session, Issue, company_id, issue_id, "issue", field="issue_id", source="query"
                )
                stmt = stmt.where(Conversation.issue_id == issue_id)
            return await keyset_page(session, stmt, Conversation, after, limit)

    async def post(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        conversation_id: uuid.UUID,
        *,
        body: str,
        steer: SteerInto,
        idempotency_key: str | None = None,
    ) -> Posted:
        """A person's message: a new turn, or a steer of the live current turn (``steer``).

        The live turn's run is locked before the conversation: the order in which a
        turn's end locks them (its run, then its conversation's reply), so the two
        never wait on each other. The run is found first without a lock; if the
        conversation's live turn changed before the locks were held, it starts over.
        A post with an ``idempotency_key`` used before in the conversation is that first
        message again (the same body) or a conflict (another body).
        """
        _person(actor)
        for _ in range(POST_ATTEMPTS):
            async with company_writes(self.sessions, company_id) as session:
                candidate = await self._live_run_id(session, company_id, conversation_id)
                run = (
                    await session.get(Run, candidate, with_for_update=True, populate_existing=True)
                    if candidate is not None
                    else None
                )
                conversation = await get_scoped(
                    session,
                    Conversation,
                    company_id,
                    conversation_id,
                    "conversation",
                    for_update=True,
                    source="path",
                )
                if idempotency_key is not None:
                    first = await self._keyed(session, conversation.id, idempotency_key)
                    if first is not None:
                        if first.body != body or first.author_ref != user_ref(actor):
                            raise ConflictError(
                                "this idempotency_key was used for another message in this "
                                "conversation; use a new key for a new message",
                                code=IDEMPOTENCY_KEY_REUSED,
                                field="idempotency_key",
                            )
                        return Posted(first, None, replayed=True)
                if conversation.state == ConversationState.CLOSED:
                    raise ConflictError("the conversation is closed", code=CONVERSATION_CLOSED)
                if await self._live_run_id(session, company_id, conversation_id) != candidate:
                    continue  # its turn changed meanwhile: nothing is written, look again
                live = run if candidate is not None else None
                comment = await add_comment(
                    session, actor, company_id, conversation.issue_id, body=body
                )
                message = ConversationMessage(
                    company_id=company_id,
                    conversation_id=conversation.id,
                    role="user",
                    author_ref=user_ref(actor),
                    body=body,
                    delivery="steer" if live else "turn",
                    idempotency_key=idempotency_key,
                )
                session.add(message)
                if live is None:
                    await self._start_turn(session, conversation)
                else:
                    await steer(session, live, comment)
                await session.flush()
                return Posted(message, live)
        raise ConflictError(
            "the conversation's turn keeps changing; send the message again",
            code=CONVERSATION_BUSY,
        )

    async def _keyed(
        self, session: AsyncSession, conversation_id: uuid.UUID, key: str
    ) -> ConversationMessage | None:
        return await session.scalar(
            select(ConversationMessage).where(
                ConversationMessage.conversation_id == conversation_id,
                ConversationMessage.idempotency_key == key,
            )
        )

    async def _live_run_id(
        self, session: AsyncSession, company_id: uuid.UUID, conversation_id: uuid.UUID
    ) -> uuid.UUID | None:
        """The running run of the conversation's current turn (a message then steers it)."""
        return await session.scalar(
            select(Run.id)
            .join(Conversation, Conversation.current_wake_id == Run.wake_request_id)
            .where(
                Conversation.id == conversation_id,
                Conversation.company_id == company_id,
                Run.company_id == company_id,
                Run.status == RunStatus.RUNNING,
            )
        )

    async def _start_turn(self, session: AsyncSession, conversation: Conversation) -> None:
        """The queued wake of the agent on the task (the comment's) is the new turn."""
        wake_id = await session.scalar(
            select(WakeRequest.id).where(
                WakeRequest.agent_id == conversation.agent_id,
                WakeRequest.issue_id == conversation.issue_id,
                WakeRequest.status == WakeStatus.QUEUED,
            )
        )
        if wake_id is None:  # the author is the task's agent itself: nothing was woken
            return
        await session.execute(
            insert(ConversationTurnRecord)
            .values(
                wake_request_id=wake_id,
                conversation_id=conversation.id,
                company_id=conversation.company_id,
                agent_id=conversation.agent_id,
                user_ref=conversation.user_ref,
                session_generation=conversation.session_generation,
            )
            .on_conflict_do_nothing()
        )
        conversation.current_wake_id = wake_id
        conversation.state = ConversationState.ACTIVE

    async def messages(
        self,
        company_id: uuid.UUID,
        conversation_id: uuid.UUID,
        *,
        after: Cursor | None,
        limit: int,
    ) -> tuple[list[ConversationMessage], Cursor | None]:
        async with self.sessions() as session:
            await get_scoped(
                session, Conversation, company_id, conversation_id, "conversation", source="path"
            )
            stmt = select(ConversationMessage).where(
                ConversationMessage.company_id == company_id,
                ConversationMessage.conversation_id == conversation_id,
            )
            return await keyset_page(session, stmt, ConversationMessage, after, limit)

    async def messages_after(
        self, company_id: uuid.UUID, conversation_id: uuid.UUID, after_seq: int, limit: int
    ) -> list[ConversationMessage]:
        """Messages past ``after_seq`` in insertion order: what the live stream sends next."""
        async with self.sessions() as session:
            rows = await session.scalars(
                select(ConversationMessage)
                .where(
                    ConversationMessage.company_id == company_id,
                    ConversationMessage.conversation_id == conversation_id,
                    ConversationMessage.seq > after_seq,
                )
                .order_by(ConversationMessage.seq)
                .limit(limit)
            )
            return list(rows)

    async def turns(self, company_id: uuid.UUID, conversation_id: uuid.UUID) -> list[dict]:
        """The conversation's turns, newest last, each with its run (once one was claimed)."""
        async with self.sessions() as session:
            await get_scoped(
                session, Conversation, company_id, conversation_id, "conversation", source="path"
            )
            rows = await session.execute(
                select(ConversationTurnRecord, WakeRequest.run_id, Run.status, Run.status_reason)
                .join(WakeRequest, WakeRequest.id == ConversationTurnRecord.wake_request_id)
                .outerjoin(Run, Run.id == WakeRequest.run_id)
                .where(
                    ConversationTurnRecord.company_id == company_id,
                    ConversationTurnRecord.conversation_id == conversation_id,
                )
                .order_by(ConversationTurnRecord.created_at)
                .limit(500)
            )
            return [
                {
                    "wake_request_id": str(t.wake_request_id),
                    "session_generation": t.session_generation,
                    "run_id": str(run_id) if run_id else None,
                    "run_status": status,
                    "status_reason": reason,
                }
                for t, run_id, status, reason in rows
            ]


def _person(actor: Actor) -> None:
    if actor.type == "agent":
        raise ForbiddenError("an agent's run token cannot chat; a person does", code=CHAT_BY_AGENT)
