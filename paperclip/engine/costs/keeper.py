"""Work a budget held goes on by itself once the budget allows it again.

A budget allows a run again when it is raised, or when a new month begins in
its company's time zone. Every pass (``PAPERCLIP_BUDGET_SWEEP_SECONDS``, on an
injectable clock) takes the tasks held ``budget_exceeded`` and the live runs
told to stop, and lets go of each whose budgets would now admit a run: the
hold is resolved and the task's agent woken (the wake coalesces with the one
that waited), the stop is lifted. Any replica may do it; rows are taken with
``SKIP LOCKED``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.actor import SYSTEM
from paperclip.domain.costs.budget_ledger import (
    BUDGET_EXCEEDED,
    Scope,
    budgets_of,
    month_of,
    months_of,
)
from paperclip.domain.holds.holds import resolve_hold
from paperclip.domain.runs.wakes import request_wake
from paperclip.engine.loop import keep_running
from paperclip.models import ACTIVE_RUN_STATUSES, Company, HoldStatus, Issue, Run, TaskHold

log = logging.getLogger(__name__)

BATCH = 200


async def allows(session: AsyncSession, scope: Scope, now: datetime) -> bool:
    """Whether every budget of ``scope`` would admit a run now (nothing is reserved)."""
    budgets = await budgets_of(session, scope)
    if not budgets:
        return True
    zone = await session.scalar(select(Company.time_zone).where(Company.id == scope.company_id))
    months = await months_of(session, budgets, month_of(now, zone or "UTC"), lock=False)
    return all(
        (row := months[b.id]).spent_micros < b.monthly_limit_micros
        and row.spent_micros + row.reserved_micros + b.run_reserve_micros <= b.monthly_limit_micros
        for b in budgets
    )


class BudgetKeeper:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        pass_seconds: float,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.sessions = sessions
        self.pass_seconds = pass_seconds
        self.clock = clock

    async def run(self) -> None:
        await keep_running(
            self.sweep,
            every=self.pass_seconds,
            log=log,
            failure="releasing work held by budgets failed",
        )

    async def sweep(self) -> int:
        """One pass; how many held tasks and stopped runs it let go of."""
        now = self.clock()
        async with self.sessions.begin() as session:
            released = await self._release_holds(session, now)
            released += await self._lift_stops(session, now)
        if released:
            log.info("budgets allow %d held task(s) or stopped run(s) again", released)
        return released

    async def _release_holds(self, session: AsyncSession, now: datetime) -> int:
        rows = (
            await session.execute(
                select(TaskHold, Issue)
                .join(Issue, Issue.id == TaskHold.issue_id)
                .where(TaskHold.kind == BUDGET_EXCEEDED, TaskHold.status == HoldStatus.ACTIVE)
                .order_by(TaskHold.created_at)
                .limit(BATCH)
                .with_for_update(of=TaskHold, skip_locked=True)
            )
        ).all()
        released = 0
        for hold, issue in rows:
            agent_id = issue.assignee_agent_id
            if agent_id is None:
                continue
            if not await allows(session, Scope(issue.company_id, agent_id, issue.project_id), now):
                continue
            resolve_hold(session, SYSTEM, hold, "budget_allows")
            await request_wake(
                session,
                SYSTEM,
                company_id=issue.company_id,
                agent_id=agent_id,
                issue_id=issue.id,
                source="budget",
                reason="its budget allows it again",
                payload={"hold_id": str(hold.id)},
            )
            released += 1
        return released

    async def _lift_stops(self, session: AsyncSession, now: datetime) -> int:
        rows = (
            await session.execute(
                select(Run, Issue.project_id)
                .outerjoin(Issue, Issue.id == Run.issue_id)
                .where(Run.budget_stop_at.is_not(None), Run.status.in_(ACTIVE_RUN_STATUSES))
                .limit(BATCH)
                .with_for_update(of=Run, skip_locked=True)
            )
        ).all()
        lifted = 0
        for run, project_id in rows:
            if await allows(session, Scope(run.company_id, run.agent_id, project_id), now):
                run.budget_stop_at = None
                lifted += 1
        return lifted
