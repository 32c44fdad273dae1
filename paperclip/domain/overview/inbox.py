"""What waits on a person across a company: the inbox.

Four kinds of item, each newest first and bounded (with the full count):

- **interactions** that wait for a person's answer or decision: every
  ``pending`` question, confirmation, approval, execution stage and blocker (an
  approval whose revision was asked for waits on the agent, not a person);
- **holds** that stand (``active``): the task starts no run until someone
  resolves them;
- **failed runs not yet looked at**: a failed run that nothing ran after for the
  same work (it is the latest run of its issue, or, without an issue, of its
  agent) while its issue is still open (not done, cancelled or parked in the
  backlog). It leaves the inbox when the work runs again (a comment, an answer
  or an assignment wakes the agent), when someone closes or parks the issue, or
  when a person dismisses it (``runs.dismissed_at``, the one thing stored);
- **blocked issues nobody is on**: ``blocked``, with no run queued or running
  and no wake queued for it. A blocker goes up the org chart first (each
  manager woken in turn, docs/company.md); past the top, or in a company
  without one, it lands here, and leaves when someone moves the issue.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, exists, func, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import aliased

from paperclip.domain.companies.companies import require_company
from paperclip.models import (
    HoldStatus,
    Interaction,
    InteractionStatus,
    Issue,
    IssueStatus,
    Run,
    RunStatus,
    TaskHold,
    WakeRequest,
    WakeStatus,
)

INBOX_LIMIT = 100
"""At most this many items of each kind in one answer (the counts are complete)."""

SNAPSHOT = text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
"""One snapshot for the lists and their counts: they agree even while runs end."""

PARKED = (IssueStatus.DONE, IssueStatus.CANCELLED, IssueStatus.BACKLOG)
"""An issue in one of these no longer waits on its failed run."""


@dataclass(frozen=True, slots=True)
class Inbox:
    """Each kind's newest items (with their issue) and its full count."""

    interactions: list[tuple[Interaction, Issue]]
    holds: list[tuple[TaskHold, Issue]]
    failed_runs: list[tuple[Run, Issue | None]]
    blocked_issues: list[Issue]
    counts: dict[str, int]


class InboxQueries:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def inbox(self, company_id: uuid.UUID, limit: int = INBOX_LIMIT) -> Inbox:
        """The company's inbox, read in one snapshot."""
        async with self.sessions() as session, session.begin():
            await session.execute(SNAPSHOT)
            await require_company(session, company_id)
            interactions = _waiting_interactions(company_id)
            holds = _standing_holds(company_id)
            failed = _unseen_failures(company_id)
            blocked = _unattended_blockers(company_id)
            return Inbox(
                interactions=[(i, issue) for i, issue in await _rows(session, interactions, limit)],
                holds=[(h, issue) for h, issue in await _rows(session, holds, limit)],
                failed_runs=[(r, issue) for r, issue in await _rows(session, failed, limit)],
                blocked_issues=[issue for (issue,) in await _rows(session, blocked, limit)],
                counts={
                    "interactions": await _count(session, interactions),
                    "holds": await _count(session, holds),
                    "failed_runs": await _count(session, failed),
                    "blocked_issues": await _count(session, blocked),
                },
            )

    async def counts(self, company_id: uuid.UUID) -> dict[str, int]:
        """Each kind's full count, read in one snapshot, without the items."""
        async with self.sessions() as session, session.begin():
            await session.execute(SNAPSHOT)
            await require_company(session, company_id)
            return {
                "interactions": await _count(session, _waiting_interactions(company_id)),
                "holds": await _count(session, _standing_holds(company_id)),
                "failed_runs": await _count(session, _unseen_failures(company_id)),
                "blocked_issues": await _count(session, _unattended_blockers(company_id)),
            }


def _waiting_interactions(company_id: uuid.UUID) -> Any:
    return (
        select(Interaction, Issue)
        .join(Issue, Issue.id == Interaction.issue_id)
        .where(
            Interaction.company_id == company_id,
            Issue.company_id == company_id,
            Interaction.status == InteractionStatus.PENDING,
        )
        .order_by(Interaction.created_at.desc(), Interaction.id.desc())
    )


def _standing_holds(company_id: uuid.UUID) -> Any:
    return (
        select(TaskHold, Issue)
        .join(Issue, Issue.id == TaskHold.issue_id)
        .where(
            TaskHold.company_id == company_id,
            Issue.company_id == company_id,
            TaskHold.status == HoldStatus.ACTIVE,
        )
        .order_by(TaskHold.created_at.desc(), TaskHold.id.desc())
    )


def unseen_failures_filter(company_id: uuid.UUID) -> Any:
    """The condition on ``Run`` (joined to its ``Issue``, outer) of a failed run nobody has
    moved past: no later run of its issue (or, without an issue, of its agent), its issue open."""
    later = aliased(Run)
    same_work = or_(
        and_(Run.issue_id.is_not(None), later.issue_id == Run.issue_id),
        and_(Run.issue_id.is_(None), later.agent_id == Run.agent_id),
    )
    ran_since = exists().where(
        later.company_id == company_id,
        later.created_at > Run.created_at,
        same_work,
    )
    return and_(
        Run.company_id == company_id,
        Run.status == RunStatus.FAILED,
        Run.dismissed_at.is_(None),
        ~ran_since,
        or_(Run.issue_id.is_(None), Issue.status.not_in(PARKED)),
    )


def _unseen_failures(company_id: uuid.UUID) -> Any:
    return (
        select(Run, Issue)
        .outerjoin(Issue, and_(Issue.id == Run.issue_id, Issue.company_id == company_id))
        .where(unseen_failures_filter(company_id))
        .order_by(Run.created_at.desc(), Run.id.desc())
    )


def _unattended_blockers(company_id: uuid.UUID) -> Any:
    """Blocked issues no agent is on: no run queued or running, no wake queued."""
    running = exists().where(
        Run.company_id == company_id,
        Run.issue_id == Issue.id,
        Run.status.in_((RunStatus.QUEUED, RunStatus.RUNNING)),
    )
    woken = exists().where(
        WakeRequest.company_id == company_id,
        WakeRequest.issue_id == Issue.id,
        WakeRequest.status == WakeStatus.QUEUED,
    )
    return (
        select(Issue)
        .where(Issue.company_id == company_id, Issue.status == IssueStatus.BLOCKED)
        .where(~running, ~woken)
        .order_by(Issue.updated_at.desc(), Issue.id.desc())
    )


async def _rows(session: AsyncSession, stmt: Any, limit: int) -> list[Any]:
    return [tuple(row) for row in (await session.execute(stmt.limit(limit))).all()]


async def _count(session: AsyncSession, stmt: Any) -> int:
    counted = select(func.count()).select_from(stmt.order_by(None).subquery())
    return int((await session.execute(counted)).scalar_one())
