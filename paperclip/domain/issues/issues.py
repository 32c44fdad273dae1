"""Issues: per-company identifiers (``issue_numbers``), assignment (which wakes the assignee),
parent links.

A run's way: from the routes (``issues_routes.py``); next, ``runs/wakes.py``
(``request_wake``) queues the assignee's wake in the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import activity_row, record_activity
from paperclip.common.actor import SYSTEM, Actor
from paperclip.common.queries import Cursor, SortKey, get_scoped, keyset_page
from paperclip.domain.companies.companies import company_writes
from paperclip.domain.issues.issue_numbers import IssueNumber, IssueNumbers
from paperclip.domain.issues.issue_parts import (
    BLOCKED,
    ENDINGS,
    escalate,
    refuse_open_parts,
    tell_parent,
)
from paperclip.domain.projects.projects import (
    default_project,
    live_workspace,
    project_on_assignment,
    project_ref,
)
from paperclip.domain.runs.live_state import LiveState, live_state, with_live_state
from paperclip.domain.runs.wakes import request_wake
from paperclip.errors import ConflictError, FieldSource, InvalidInputError, NotFoundError
from paperclip.models import ActivityEntry, Agent, Company, Issue, IssueStatus, Run

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


def working_status(status: str) -> str:
    """The status of an issue (of ``status``) once a run was claimed for it: in progress."""
    return IssueStatus.IN_PROGRESS if status in WORK_STARTS_FROM else status


async def settle_after_run(
    session: AsyncSession,
    issue_id: uuid.UUID,
    *,
    succeeded: bool,
    outcome: str | None,
    by: Run | None = None,
) -> None:
    """A run of the issue ended: its outcome decides the status; a failure puts it back to todo.
    A part's end wakes its parent's assignee; a blocker no parent hears of goes up the org
    chart, from the agent of the run (``by``) to its manager (``issue_parts``)."""
    issue = await session.get(Issue, issue_id, with_for_update=ISSUE_LOCK)
    if issue is None:
        return
    before = issue.status
    if succeeded and outcome is not None:
        issue.status = OUTCOME_STATUS.get(outcome, issue.status)
    elif not succeeded and issue.status == IssueStatus.IN_PROGRESS:
        issue.status = IssueStatus.TODO
    told = False
    if not succeeded:
        told = await tell_parent(session, SYSTEM, issue, "failed")
    elif issue.status != before and issue.status in ENDINGS:
        told = await tell_parent(session, SYSTEM, issue, issue.status)
    if succeeded and outcome == BLOCKED and not told and by is not None:
        await escalate(session, issue, by.agent_id, str((by.result or {}).get("summary") or ""))


def new_issue(
    company_id: uuid.UUID,
    number: IssueNumber,
    *,
    title: str,
    description: str,
    status: str,
    priority: str,
    assignee_id: uuid.UUID | None,
    parent_id: uuid.UUID | None = None,
    project_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """The values of a new issue's row (``create_issue`` writes one; a routine's pass writes
    many in one statement, and records ``issue_created`` for each)."""
    return {
        "id": uuid.uuid4(),
        "company_id": company_id,
        "number": number.number,
        "identifier": number.identifier,
        "title": title,
        "description": description,
        "status": status,
        "priority": priority,
        "assignee_agent_id": assignee_id,
        "parent_id": parent_id,
        "project_id": project_id,
    }


def issue_created(actor: Actor, issue: Mapping[str, Any]) -> dict[str, Any]:
    """The activity entry of a new issue (``new_issue``'s values)."""
    return activity_row(
        actor,
        "issue.created",
        entity_type="issue",
        entity_id=issue["id"],
        company_id=issue["company_id"],
        details={"identifier": issue["identifier"]},
    )


async def create_issue(
    session: AsyncSession,
    actor: Actor,
    company_id: uuid.UUID,
    *,
    number: IssueNumber,
    title: str,
    description: str,
    status: str,
    priority: str,
    assignee: Agent | None,
    parent_id: uuid.UUID | None = None,
    project_id: uuid.UUID | None = None,
) -> Issue:
    """Write an issue in the caller's transaction (its references checked by the caller).

    ``number`` is taken beforehand (``IssueNumbers``), in a statement that
    committed on its own: this transaction does not hold the company's row,
    so issues of one company are written side by side. A transaction that
    rolls back leaves its number unused (a gap); numbers stay unique (the
    database refuses a company's number twice). Without a project, the issue
    gets its assignee's default project (if any). Nobody is woken here."""
    if project_id is None and assignee is not None:
        project_id = await default_project(session, company_id, assignee)
    values = new_issue(
        company_id,
        number,
        title=title,
        description=description,
        status=status,
        priority=priority,
        assignee_id=assignee.id if assignee is not None else None,
        parent_id=parent_id,
        project_id=project_id,
    )
    issue = Issue(**values)
    session.add(issue)
    await session.flush()
    session.add(ActivityEntry(**issue_created(actor, values)))
    return issue


class IssueService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], numbers: IssueNumbers) -> None:
        self.sessions = sessions
        self.numbers = numbers

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
        project_id: uuid.UUID | None = None,
    ) -> Issue:
        """Create an issue; without a project, it gets its assignee's default project (if any)."""
        async with company_writes(self.sessions, company_id) as session:
            assignee = await _check_links(
                session, company_id, None, assignee_agent_id, parent_id, project_id
            )
            # Taken once the request is known good: a refused one spends no number.
            number = await self.numbers.one(company_id)
            issue = await create_issue(
                session,
                actor,
                company_id,
                number=number,
                title=title,
                description=description,
                status=status,
                priority=priority,
                assignee=assignee,
                parent_id=parent_id,
                project_id=project_id,
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
        project_id: uuid.UUID | None = None,
        identifier: str | None = None,
        priority: str | None = None,
        sort: SortKey = "created",
    ) -> tuple[list[tuple[Issue, LiveState]], Cursor | None]:
        """A page of the company's issues, filtered, each with its live state (read in the
        same statement); ``q`` is text in the title, the description or the identifier, in
        any case."""
        async with self.sessions() as session:
            if await session.get(Company, company_id) is None:
                raise NotFoundError.of("company", company_id)
            # A filter naming another company's row is answered like any foreign id.
            await _check_links(
                session, company_id, None, assignee_agent_id, parent_id, project_id, source="query"
            )
            stmt = select(Issue).where(Issue.company_id == company_id)
            if status is not None:
                stmt = stmt.where(Issue.status == status)
            if assignee_agent_id is not None:
                stmt = stmt.where(Issue.assignee_agent_id == assignee_agent_id)
            if parent_id is not None:
                stmt = stmt.where(Issue.parent_id == parent_id)
            if project_id is not None:
                stmt = stmt.where(Issue.project_id == project_id)
            if identifier is not None:
                stmt = stmt.where(Issue.identifier == identifier.strip().upper())
            if priority is not None:
                stmt = stmt.where(Issue.priority == priority)
            if q:
                pattern = (
                    "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                )
                stmt = stmt.where(
                    or_(
                        Issue.title.ilike(pattern, escape="\\"),
                        Issue.description.ilike(pattern, escape="\\"),
                        Issue.identifier.ilike(pattern, escape="\\"),
                    )
                )
            rows, end = await keyset_page(
                session, with_live_state(stmt), Issue, after, limit, sort, with_columns=True
            )
            return [(row[0], live_state(row[0], row)) for row in rows], end

    async def update(
        self, actor: Actor, company_id: uuid.UUID, issue_id: uuid.UUID, changes: dict[str, Any]
    ) -> Issue:
        """Change an issue (see :func:`update_issue`), in a transaction of its own; not to
        ``done`` while a part of it is open, unless a person says so (``issue_parts``)."""
        async with company_writes(self.sessions, company_id) as session:
            issue = await get_scoped(session, Issue, company_id, issue_id, "issue", for_update=True)
            await refuse_open_parts(session, actor, issue, changes)
            return await update_issue(session, actor, company_id, issue_id, changes)

    async def delete(self, actor: Actor, company_id: uuid.UUID, issue_id: uuid.UUID) -> None:
        async with company_writes(self.sessions, company_id) as session:
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
    session: AsyncSession,
    company_id: uuid.UUID,
    issue_id: uuid.UUID | None,
    assignee_agent_id: uuid.UUID | None,
    parent_id: uuid.UUID | None,
    project_id: uuid.UUID | None = None,
    source: FieldSource = "body",
) -> Agent | None:
    """Check the ids the issue refers to are the company's; the assignee's row, if one."""
    assignee = None
    if project_id is not None:
        await project_ref(session, company_id, project_id, field="project_id", source=source)
    if assignee_agent_id is not None:
        assignee = await get_scoped(
            session,
            Agent,
            company_id,
            assignee_agent_id,
            "agent",
            field="assignee_agent_id",
            source=source,
        )
    if parent_id is None:
        return assignee
    # Walk up from the new parent: meeting this issue would close a cycle.
    cursor: uuid.UUID | None = parent_id
    for _ in range(MAX_PARENT_DEPTH):
        if cursor is None:
            return assignee
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


async def _project_change(
    session: AsyncSession,
    issue: Issue,
    changes: dict[str, Any],
    assignee: Agent | None,
    newly_assigned: bool,
) -> dict[str, Any]:
    """``changes`` with the project an update gives the issue, checked against its worktree."""
    if "project_id" in changes:
        if changes["project_id"] != issue.project_id and (
            workspace := await live_workspace(session, issue.id)
        ):
            raise ConflictError(
                f"the issue's worktree (branch {workspace.branch}) was made from its project's "
                "repository; it can move to another project once the worktree is released "
                "(the issue done or cancelled, and its retention passed)",
                code="workspace_exists",
            )
        return changes
    if newly_assigned and assignee is not None:
        project_id = await project_on_assignment(session, issue, assignee)
        if project_id is not None:
            return {**changes, "project_id": project_id}
    return changes


async def update_issue(
    session: AsyncSession,
    actor: Actor,
    company_id: uuid.UUID,
    issue_id: uuid.UUID,
    changes: dict[str, Any],
) -> Issue:
    """Change an issue in the caller's transaction (the company's lock held), with its activity
    entry: the one way an issue's fields change. It keeps its project while its worktree lives
    (``workspace_exists``). Assigned without a project, it gets the new assignee's default
    project; a new assignee is woken.
    """
    issue = await get_scoped(session, Issue, company_id, issue_id, "issue", for_update=True)
    assignee = await _check_links(
        session,
        company_id,
        issue.id,
        changes.get("assignee_agent_id"),
        changes.get("parent_id"),
        changes.get("project_id"),
    )
    newly_assigned = (
        "assignee_agent_id" in changes
        and changes["assignee_agent_id"] is not None
        and changes["assignee_agent_id"] != issue.assignee_agent_id
    )
    changes = await _project_change(session, issue, changes, assignee, newly_assigned)
    ended = changes.get("status") in ENDINGS and changes["status"] != issue.status
    for field, value in changes.items():
        setattr(issue, field, value)
    if ended:
        await tell_parent(session, actor, issue, issue.status)
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
