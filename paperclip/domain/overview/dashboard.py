"""A company at a glance: what runs now, what failed lately, the load of each agent."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.domain.companies.companies import require_company
from paperclip.domain.overview.inbox import SNAPSHOT
from paperclip.models import (
    ACTIVE_RUN_STATUSES,
    Agent,
    Issue,
    IssueStatus,
    Run,
    RunStatus,
    WakeRequest,
)
from paperclip.models.wake import WakeStatus

ACTIVE_LIMIT = 50
FAILURES_LIMIT = 10
AGENTS_LIMIT = 200
RECENT = timedelta(hours=24)
"""What "lately" means for the per-agent counts of runs and failures."""
CLOSED = (IssueStatus.DONE, IssueStatus.CANCELLED)


@dataclass(frozen=True, slots=True)
class AgentLoad:
    agent: Agent
    active_runs: int
    """Queued or running now."""
    queued_wakes: int
    """Wakes waiting for a run (the agent's work not started yet)."""
    open_issues: int
    """Assigned to it and not done or cancelled."""
    runs_recent: int
    failed_recent: int
    """Runs started in the last 24 hours, and how many of them failed."""


@dataclass(frozen=True, slots=True)
class Dashboard:
    active_runs: list[tuple[Run, Issue | None]]
    recent_failures: list[tuple[Run, Issue | None]]
    agents: list[AgentLoad]
    issues_by_status: dict[str, int]
    since: datetime
    """Where the recent counts start."""


class DashboardQueries:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def dashboard(self, company_id: uuid.UUID, now: datetime | None = None) -> Dashboard:
        """The company's dashboard, read in one snapshot."""
        since = (now or datetime.now(UTC)) - RECENT
        async with self.sessions() as session, session.begin():
            await session.execute(SNAPSHOT)
            await require_company(session, company_id)
            return Dashboard(
                active_runs=await _runs(
                    session, company_id, Run.status.in_(ACTIVE_RUN_STATUSES), ACTIVE_LIMIT
                ),
                recent_failures=await _runs(
                    session, company_id, Run.status == RunStatus.FAILED, FAILURES_LIMIT
                ),
                agents=await _agent_loads(session, company_id, since),
                issues_by_status=await _issue_counts(session, company_id),
                since=since,
            )


async def _runs(
    session: AsyncSession, company_id: uuid.UUID, condition: object, limit: int
) -> list[tuple[Run, Issue | None]]:
    stmt = (
        select(Run, Issue)
        .outerjoin(Issue, and_(Issue.id == Run.issue_id, Issue.company_id == company_id))
        .where(Run.company_id == company_id, condition)  # type: ignore[arg-type]
        .order_by(Run.created_at.desc(), Run.id.desc())
        .limit(limit)
    )
    return [(run, issue) for run, issue in (await session.execute(stmt)).all()]


async def _counts(session: AsyncSession, stmt: object) -> dict[uuid.UUID, int]:
    return {key: int(n) for key, n in (await session.execute(stmt)).all()}  # type: ignore[call-overload]


async def _agent_loads(
    session: AsyncSession, company_id: uuid.UUID, since: datetime
) -> list[AgentLoad]:
    agents = list(
        (
            await session.execute(
                select(Agent)
                .where(Agent.company_id == company_id)
                .order_by(Agent.name, Agent.id)
                .limit(AGENTS_LIMIT)
            )
        ).scalars()
    )
    runs = select(Run.agent_id, func.count()).where(Run.company_id == company_id)
    active = await _counts(
        session, runs.where(Run.status.in_(ACTIVE_RUN_STATUSES)).group_by(Run.agent_id)
    )
    recent = await _counts(session, runs.where(Run.created_at >= since).group_by(Run.agent_id))
    failed = await _counts(
        session,
        runs.where(Run.created_at >= since, Run.status == RunStatus.FAILED).group_by(Run.agent_id),
    )
    wakes = await _counts(
        session,
        select(WakeRequest.agent_id, func.count())
        .where(WakeRequest.company_id == company_id, WakeRequest.status == WakeStatus.QUEUED)
        .group_by(WakeRequest.agent_id),
    )
    issues = await _counts(
        session,
        select(Issue.assignee_agent_id, func.count())
        .where(
            Issue.company_id == company_id,
            Issue.assignee_agent_id.is_not(None),
            Issue.status.not_in(CLOSED),
        )
        .group_by(Issue.assignee_agent_id),
    )
    return [
        AgentLoad(
            agent=a,
            active_runs=active.get(a.id, 0),
            queued_wakes=wakes.get(a.id, 0),
            open_issues=issues.get(a.id, 0),
            runs_recent=recent.get(a.id, 0),
            failed_recent=failed.get(a.id, 0),
        )
        for a in agents
    ]


async def _issue_counts(session: AsyncSession, company_id: uuid.UUID) -> dict[str, int]:
    rows = await session.execute(
        select(Issue.status, func.count())
        .where(Issue.company_id == company_id)
        .group_by(Issue.status)
    )
    counted = {str(status): int(n) for status, n in rows.all()}
    return {status.value: counted.get(status.value, 0) for status in IssueStatus}
