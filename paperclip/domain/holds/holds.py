"""Holds: blocks on a task. While one is active, a wake of the task starts no run.

The system holds a task when recovery cannot go on by itself (a run's
retries are spent, work of unknown outcome must not be replayed); an
operator holds one by hand. A hold is resolved once, and a resolved hold is
never reopened. The system resolves only its own holds: an operator's
decision is never undone by recovery.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import Cursor, get_scoped, keyset_page
from paperclip.domain.companies.companies import company_writes, require_company
from paperclip.domain.runs.wakes import request_wake
from paperclip.errors import ConflictError, ForbiddenError, NotFoundError
from paperclip.models import HoldSetter, HoldStatus, Issue, TaskHold

OPERATOR_HOLD = "operator_hold"


async def hold_task(
    session: AsyncSession,
    actor: Actor,
    *,
    company_id: uuid.UUID,
    issue_id: uuid.UUID,
    kind: str,
    reason: str,
    run_id: uuid.UUID | None = None,
    replay_forbidden: bool = False,
    details: dict[str, Any] | None = None,
) -> TaskHold:
    """Hold the task, in the caller's transaction."""
    hold = TaskHold(
        id=uuid.uuid4(),
        company_id=company_id,
        issue_id=issue_id,
        run_id=run_id,
        kind=kind,
        reason=reason,
        set_by=HoldSetter.SYSTEM if actor.type == "system" else HoldSetter.OPERATOR,
        set_by_actor=f"{actor.type}:{actor.id}",
        replay_forbidden=replay_forbidden,
        status=HoldStatus.ACTIVE,
        details=details or {},
    )
    session.add(hold)
    await session.flush()
    record_activity(
        session,
        actor,
        "hold.set",
        entity_type="task_hold",
        entity_id=hold.id,
        company_id=company_id,
        details={"issue_id": str(issue_id), "kind": kind},
    )
    return hold


def resolve_hold(session: AsyncSession, actor: Actor, hold: TaskHold, resolution: str) -> None:
    """Resolve the (locked, active) ``hold`` in the caller's transaction."""
    hold.status = HoldStatus.RESOLVED
    hold.resolution = resolution
    hold.resolved_by = HoldSetter.SYSTEM if actor.type == "system" else HoldSetter.OPERATOR
    hold.resolved_by_actor = f"{actor.type}:{actor.id}"
    hold.resolved_at = datetime.now(UTC)
    record_activity(
        session,
        actor,
        "hold.resolved",
        entity_type="task_hold",
        entity_id=hold.id,
        company_id=hold.company_id,
        details={"issue_id": str(hold.issue_id), "resolution": resolution},
    )


class HoldService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def list(
        self,
        company_id: uuid.UUID,
        *,
        issue_id: uuid.UUID | None,
        status: str | None,
        after: Cursor | None,
        limit: int,
    ) -> tuple[list[TaskHold], Cursor | None]:
        async with self.sessions() as session:
            await require_company(session, company_id)  # a company gone is a 404, not a page
            if issue_id is not None:
                await get_scoped(
                    session, Issue, company_id, issue_id, "issue", field="issue_id", source="query"
                )
            stmt = select(TaskHold).where(TaskHold.company_id == company_id)
            if issue_id is not None:
                stmt = stmt.where(TaskHold.issue_id == issue_id)
            if status is not None:
                stmt = stmt.where(TaskHold.status == status)
            return await keyset_page(session, stmt, TaskHold, after, limit)

    async def get(self, company_id: uuid.UUID, hold_id: uuid.UUID) -> TaskHold:
        async with self.sessions() as session:
            return await _hold(session, company_id, hold_id)

    async def create(
        self, actor: Actor, company_id: uuid.UUID, *, issue_id: uuid.UUID, reason: str
    ) -> TaskHold:
        """An operator's hold: the task starts no run until it is released."""
        async with company_writes(self.sessions, company_id) as session:
            await get_scoped(session, Issue, company_id, issue_id, "issue", field="issue_id")
            return await hold_task(
                session,
                actor,
                company_id=company_id,
                issue_id=issue_id,
                kind=OPERATOR_HOLD,
                reason=reason,
            )

    async def resolve(
        self, actor: Actor, company_id: uuid.UUID, hold_id: uuid.UUID, *, resolution: str
    ) -> TaskHold:
        """Resolve an active hold (once); its task's queued wakes may start runs again."""
        async with company_writes(self.sessions, company_id) as session:
            hold = await _hold(session, company_id, hold_id, for_update=True)
            if hold.status != HoldStatus.ACTIVE:
                raise ConflictError(
                    f"hold {hold.id} was resolved already ({hold.resolution})",
                    code="hold_already_resolved",
                )
            if actor.type == "system" and hold.set_by == HoldSetter.OPERATOR:
                raise ForbiddenError(
                    "an operator's hold is resolved by an operator", code="operator_hold"
                )
            resolve_hold(session, actor, hold, resolution)
            issue = await session.get(Issue, hold.issue_id)
            if issue is not None and issue.assignee_agent_id is not None and actor.type != "system":
                # An operator released the task: its agent takes it up again.
                await request_wake(
                    session,
                    actor,
                    company_id=company_id,
                    agent_id=issue.assignee_agent_id,
                    issue_id=issue.id,
                    source="hold_resolved",
                    reason=f"hold resolved: {resolution}",
                    payload={"hold_id": str(hold.id)},
                )
            return hold


async def _hold(
    session: AsyncSession, company_id: uuid.UUID, hold_id: uuid.UUID, *, for_update: bool = False
) -> TaskHold:
    stmt = select(TaskHold).where(TaskHold.id == hold_id, TaskHold.company_id == company_id)
    if for_update:
        stmt = stmt.with_for_update()
    hold = (await session.execute(stmt)).scalar_one_or_none()
    if hold is None:
        raise NotFoundError.of("hold", hold_id)
    return hold
