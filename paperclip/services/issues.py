"""Issues: per-company identifiers, assignment (which wakes the assignee), parent links."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.errors import FieldSource, InvalidInputError, NotFoundError
from paperclip.models import Agent, Company, Issue, IssueStatus
from paperclip.services.activity import record_activity
from paperclip.services.actor import Actor
from paperclip.services.queries import Cursor, get_scoped, keyset_page
from paperclip.services.wakes import request_wake

MAX_PARENT_DEPTH = 100

ISSUE_LOCK = {"key_share": True}
"""How a transaction that updates an issue locks it: ``FOR NO KEY UPDATE``.

A comment, a run or a wake written for the issue takes ``FOR KEY SHARE`` on its
row (the foreign key). ``FOR UPDATE`` waits for those writers; a comment's
transaction that then waits for the issue's queued wake, which a claim holds
while it locks the issue, closes a cycle PostgreSQL ends as a deadlock (a 500).
``FOR NO KEY UPDATE`` still orders the transactions that update the issue."""

WORK_STARTS_FROM = (IssueStatus.TODO, IssueStatus.BACKLOG, IssueStatus.BLOCKED)
"""The statuses a claimed run moves to ``in_progress``."""
OUTCOME_STATUS = {
    "done": IssueStatus.DONE,
    "needs_review": IssueStatus.IN_REVIEW,
    "blocked": IssueStatus.BLOCKED,
}
"""What a run's reported outcome makes of its issue."""


def start_work(issue: Issue) -> None:
    """A run was claimed for the issue (its row locked by the caller): it is in progress now."""
    if issue.status in WORK_STARTS_FROM:
        issue.status = IssueStatus.IN_PROGRESS


async def settle_after_run(
    session: AsyncSession, issue_id: uuid.UUID, *, succeeded: bool, outcome: str | None
) -> None:
    """A run of the issue ended: its outcome decides the status; a failure puts it back to todo."""
    issue = await session.get(Issue, issue_id, with_for_update=ISSUE_LOCK)
    if issue is None:
        return
    if succeeded and outcome is not None:
        issue.status = OUTCOME_STATUS.get(outcome, issue.status)
    elif not succeeded and issue.status == IssueStatus.IN_PROGRESS:
        issue.status = IssueStatus.TODO


class IssueService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def create(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        *,
        title: str,
        description: str,
        status: str,
        priority: str,
        assignee_agent_id: uuid.UUID | None,
        parent_id: uuid.UUID | None,
    ) -> Issue:
        async with self.sessions.begin() as session:
            await self._check_links(session, company_id, None, assignee_agent_id, parent_id)
            # The counter row is the lock: concurrent creations get distinct numbers.
            allocated = (
                await session.execute(
                    update(Company)
                    .where(Company.id == company_id)
                    .values(issue_counter=Company.issue_counter + 1)
                    .returning(Company.issue_counter, Company.issue_prefix)
                )
            ).one_or_none()
            if allocated is None:
                raise NotFoundError.of("company", company_id)
            number, prefix = allocated
            issue = Issue(
                id=uuid.uuid4(),
                company_id=company_id,
                number=number,
                identifier=f"{prefix}-{number}",
                title=title,
                description=description,
                status=status,
                priority=priority,
                assignee_agent_id=assignee_agent_id,
                parent_id=parent_id,
            )
            session.add(issue)
            await session.flush()
            record_activity(
                session,
                actor,
                "issue.created",
                entity_type="issue",
                entity_id=issue.id,
                company_id=company_id,
                details={"identifier": issue.identifier},
            )
            if assignee_agent_id is not None:
                await request_wake(
                    session,
                    actor,
                    company_id=company_id,
                    agent_id=assignee_agent_id,
                    issue_id=issue.id,
                    source="assignment",
                    reason="issue assigned",
                )
        return issue

    async def list(
        self,
        company_id: uuid.UUID,
        *,
        status: str | None,
        assignee_agent_id: uuid.UUID | None,
        parent_id: uuid.UUID | None,
        q: str | None,
        after: Cursor | None,
        limit: int,
    ) -> tuple[list[Issue], Cursor | None]:
        async with self.sessions() as session:
            if await session.get(Company, company_id) is None:
                raise NotFoundError.of("company", company_id)
            # A filter naming another company's row is answered like any foreign id.
            await self._check_links(
                session, company_id, None, assignee_agent_id, parent_id, source="query"
            )
            stmt = select(Issue).where(Issue.company_id == company_id)
            if status is not None:
                stmt = stmt.where(Issue.status == status)
            if assignee_agent_id is not None:
                stmt = stmt.where(Issue.assignee_agent_id == assignee_agent_id)
            if parent_id is not None:
                stmt = stmt.where(Issue.parent_id == parent_id)
            if q:
                pattern = (
                    "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                )
                stmt = stmt.where(Issue.title.ilike(pattern, escape="\\"))
            return await keyset_page(session, stmt, Issue, after, limit)

    async def update(
        self, actor: Actor, company_id: uuid.UUID, issue_id: uuid.UUID, changes: dict[str, Any]
    ) -> Issue:
        async with self.sessions.begin() as session:
            issue = await get_scoped(session, Issue, company_id, issue_id, "issue", for_update=True)
            await self._check_links(
                session,
                company_id,
                issue.id,
                changes.get("assignee_agent_id"),
                changes.get("parent_id"),
            )
            newly_assigned = (
                "assignee_agent_id" in changes
                and changes["assignee_agent_id"] is not None
                and changes["assignee_agent_id"] != issue.assignee_agent_id
            )
            for field, value in changes.items():
                setattr(issue, field, value)
            await session.flush()
            record_activity(
                session,
                actor,
                "issue.updated",
                entity_type="issue",
                entity_id=issue.id,
                company_id=company_id,
                details={"fields": sorted(changes)},
            )
            if newly_assigned:
                await request_wake(
                    session,
                    actor,
                    company_id=company_id,
                    agent_id=changes["assignee_agent_id"],
                    issue_id=issue.id,
                    source="assignment",
                    reason="issue assigned",
                )
        return issue

    async def delete(self, actor: Actor, company_id: uuid.UUID, issue_id: uuid.UUID) -> None:
        async with self.sessions.begin() as session:
            issue = await get_scoped(session, Issue, company_id, issue_id, "issue", for_update=True)
            await session.delete(issue)
            record_activity(
                session,
                actor,
                "issue.deleted",
                entity_type="issue",
                entity_id=issue_id,
                company_id=company_id,
                details={"identifier": issue.identifier},
            )

    async def _check_links(
        self,
        session: AsyncSession,
        company_id: uuid.UUID,
        issue_id: uuid.UUID | None,
        assignee_agent_id: uuid.UUID | None,
        parent_id: uuid.UUID | None,
        source: FieldSource = "body",
    ) -> None:
        if assignee_agent_id is not None:
            await get_scoped(
                session,
                Agent,
                company_id,
                assignee_agent_id,
                "agent",
                field="assignee_agent_id",
                source=source,
            )
        if parent_id is None:
            return
        # Walk up from the new parent: meeting this issue would close a cycle.
        cursor: uuid.UUID | None = parent_id
        for _ in range(MAX_PARENT_DEPTH):
            if cursor is None:
                return
            if cursor == issue_id:
                raise InvalidInputError(
                    "an issue cannot be its own ancestor", code="parent_cycle", field="parent_id"
                )
            parent = await get_scoped(
                session, Issue, company_id, cursor, "issue", field="parent_id", source=source
            )
            cursor = parent.parent_id
        raise InvalidInputError(
            "the parent chain is too deep", code="parent_too_deep", field="parent_id"
        )
