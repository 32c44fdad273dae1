"""Interactions on a task: cards, approvals, execution stages and dependency blockers.

While pending (or, for an approval, while a revision is asked for) an
interaction holds its task: a turn that ends then commits
``governed_response_waiting``. Answering a card, or deciding an approval,
wakes the task's agent (a new turn of the card's conversation).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import Cursor, get_scoped, keyset_page
from paperclip.domain.companies.companies import company_writes
from paperclip.domain.runs.wakes import request_wake
from paperclip.errors import ConflictError, ForbiddenError, InvalidInputError
from paperclip.models import (
    CARD_KINDS,
    Conversation,
    ConversationState,
    ConversationTurnRecord,
    Interaction,
    InteractionKind,
    InteractionStatus,
    Issue,
    Run,
)

INTERACTION_NOT_PENDING = "interaction_not_pending"
ACTION_NOT_ALLOWED = "interaction_action_not_allowed"
ANSWER_BY_AGENT = "interaction_answer_by_agent_forbidden"

# action -> (kinds it applies to, statuses it applies from, status it leads to)
ACTIONS: dict[str, tuple[frozenset[str], tuple[str, ...], InteractionStatus]] = {
    "answer": (CARD_KINDS, (InteractionStatus.PENDING,), InteractionStatus.ANSWERED),
    "approve": (
        frozenset({InteractionKind.APPROVAL}),
        (InteractionStatus.PENDING,),
        InteractionStatus.APPROVED,
    ),
    "reject": (
        frozenset({InteractionKind.APPROVAL}),
        (InteractionStatus.PENDING,),
        InteractionStatus.REJECTED,
    ),
    "request_revision": (
        frozenset({InteractionKind.APPROVAL}),
        (InteractionStatus.PENDING,),
        InteractionStatus.REVISION_REQUESTED,
    ),
    "resubmit": (
        frozenset({InteractionKind.APPROVAL}),
        (InteractionStatus.REVISION_REQUESTED,),
        InteractionStatus.PENDING,
    ),
    "resolve": (
        frozenset({InteractionKind.EXECUTION_STAGE, InteractionKind.DEPENDENCY}),
        (InteractionStatus.PENDING,),
        InteractionStatus.RESOLVED,
    ),
}
WAKES = frozenset({"answer", "approve", "reject", "request_revision", "resolve"})
"""Actions whose outcome the agent must act on: they wake it."""


async def raise_card(
    session: AsyncSession, run: Run, *, kind: str, title: str, body: str, options: list[str]
) -> Interaction:
    """A card the run's agent raised (``request_human_input``), in the run's transaction."""
    assert run.issue_id is not None
    conversation_id = await session.scalar(
        select(ConversationTurnRecord.conversation_id).where(
            ConversationTurnRecord.wake_request_id == run.wake_request_id
        )
    )
    card = Interaction(
        company_id=run.company_id,
        issue_id=run.issue_id,
        conversation_id=conversation_id,
        run_id=run.id,
        kind=kind,
        status=InteractionStatus.PENDING,
        title=title,
        body=body,
        options=options,
        revision=1,
        created_by=f"agent:{run.agent_id}",
    )
    session.add(card)
    await session.flush()
    return card


class InteractionService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def create(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        issue_id: uuid.UUID,
        *,
        kind: str,
        title: str,
        body: str,
        options: list[str],
        conversation_id: uuid.UUID | None,
    ) -> Interaction:
        """An approval, execution stage or dependency blocker linked to the task (a person's:
        a run token may not call this route, ``paperclip.api.auth.RUN_TOKEN_ROUTES``)."""
        if kind in CARD_KINDS:
            raise InvalidInputError(
                "question and confirmation cards are raised by the agent "
                "(request_human_input); create an approval, execution_stage or dependency",
                code="interaction_kind_not_allowed",
                field="kind",
            )
        async with company_writes(self.sessions, company_id) as session:
            await get_scoped(session, Issue, company_id, issue_id, "issue", source="path")
            if conversation_id is not None:
                conversation = await get_scoped(
                    session,
                    Conversation,
                    company_id,
                    conversation_id,
                    "conversation",
                    field="conversation_id",
                )
                if conversation.issue_id != issue_id:
                    raise InvalidInputError(
                        "the conversation is about another task",
                        code="conversation_not_on_issue",
                        field="conversation_id",
                    )
            interaction = Interaction(
                company_id=company_id,
                issue_id=issue_id,
                conversation_id=conversation_id,
                run_id=actor.run_id,
                kind=kind,
                status=InteractionStatus.PENDING,
                title=title,
                body=body,
                options=options,
                revision=1,
                created_by=f"{actor.type}:{actor.id}",
            )
            session.add(interaction)
            await session.flush()
            _activity(session, actor, interaction, "interaction.created")
            return interaction

    async def list(
        self,
        company_id: uuid.UUID,
        issue_id: uuid.UUID,
        *,
        after: Cursor | None,
        limit: int,
    ) -> tuple[list[Interaction], Cursor | None]:
        async with self.sessions() as session:
            await get_scoped(session, Issue, company_id, issue_id, "issue", source="path")
            stmt = select(Interaction).where(
                Interaction.company_id == company_id, Interaction.issue_id == issue_id
            )
            return await keyset_page(session, stmt, Interaction, after, limit)

    async def act(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        interaction_id: uuid.UUID,
        action: str,
        *,
        response: dict[str, Any],
    ) -> Interaction:
        """Answer a card, decide an approval (approve, reject, request a revision), resubmit it,
        or resolve a stage or blocker: once, under the interaction's row lock."""
        kinds, sources, target = ACTIONS[action]
        if action != "resubmit" and actor.type == "agent":
            raise ForbiddenError(
                "a person answers and decides; an agent does not", code=ANSWER_BY_AGENT
            )
        async with company_writes(self.sessions, company_id) as session:
            interaction = await get_scoped(
                session,
                Interaction,
                company_id,
                interaction_id,
                "interaction",
                for_update=True,
                source="path",
            )
            if interaction.kind not in kinds:
                raise ConflictError(
                    f"{action} does not apply to a {interaction.kind}", code=ACTION_NOT_ALLOWED
                )
            if interaction.status not in sources:
                raise ConflictError(
                    f"the {interaction.kind} is {interaction.status}; {action} needs it "
                    + " or ".join(sources),
                    code=INTERACTION_NOT_PENDING,
                )
            interaction.status = target
            interaction.response = {"action": action, **response}
            if action == "resubmit":
                interaction.revision += 1
                interaction.resolved_by = interaction.resolved_at = None
            else:
                interaction.resolved_by = f"{actor.type}:{actor.id}"
                interaction.resolved_at = datetime.now(UTC)
            _activity(session, actor, interaction, f"interaction.{action}")
            if action in WAKES:
                await self._wake_agent(session, actor, interaction, action)
            return interaction

    async def _wake_agent(
        self, session: AsyncSession, actor: Actor, interaction: Interaction, action: str
    ) -> None:
        """The task's agent is woken with the outcome; in a chat, that wake is the next turn."""
        issue = await session.get(Issue, interaction.issue_id)
        if issue is None or issue.assignee_agent_id is None:
            return
        woken = await request_wake(
            session,
            actor,
            company_id=interaction.company_id,
            agent_id=issue.assignee_agent_id,
            issue_id=issue.id,
            source="interaction",
            reason=f"{interaction.kind} {action}",
            payload={"interaction_id": str(interaction.id), "action": action},
        )
        if interaction.conversation_id is None:
            return
        conversation = await session.get(
            Conversation, interaction.conversation_id, with_for_update=True
        )
        if conversation is None or conversation.agent_id != issue.assignee_agent_id:
            return
        await session.execute(
            insert(ConversationTurnRecord)
            .values(
                wake_request_id=woken.wake.id,
                conversation_id=conversation.id,
                company_id=conversation.company_id,
                agent_id=conversation.agent_id,
                user_ref=conversation.user_ref,
                session_generation=conversation.session_generation,
            )
            .on_conflict_do_nothing()
        )
        conversation.current_wake_id = woken.wake.id
        conversation.state = ConversationState.ACTIVE


def _activity(session: AsyncSession, actor: Actor, interaction: Interaction, action: str) -> None:
    record_activity(
        session,
        actor,
        action,
        entity_type="interaction",
        entity_id=interaction.id,
        company_id=interaction.company_id,
        details={"issue_id": str(interaction.issue_id), "kind": interaction.kind},
    )
