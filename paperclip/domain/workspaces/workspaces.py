"""An issue's execution workspace as people see it: where it lives, what is in it, forgetting it.

The engine makes, records and releases worktrees
(``paperclip/engine/workspaces``); this service reads what it recorded, and
lets an operator forget a worktree whose runner host is gone for good, so that
the issue's next run makes a new one on another runner.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import and_, exists, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import get_scoped
from paperclip.domain.companies.companies import company_writes
from paperclip.errors import ConflictError, NotFoundError
from paperclip.models import (
    ACTIVE_RUN_STATUSES,
    Issue,
    IssueWorkspace,
    Project,
    Run,
    Runner,
    WorkspaceStatus,
)

FORGOTTEN = "forgotten"
"""``error_code`` of a worktree an operator forgot: it stays on its host, unused."""


@dataclass(frozen=True, slots=True)
class WorkspaceView:
    """An issue's workspace row, with the names people know its runner and project by."""

    row: IssueWorkspace
    runner_name: str | None
    project_name: str | None


class WorkspaceService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def get(self, company_id: uuid.UUID, issue_id: uuid.UUID) -> WorkspaceView:
        """The issue's workspace; ``workspace_not_found`` when its runs never had one."""
        async with self.sessions() as session:
            return await self._view(session, company_id, issue_id, for_update=False)

    async def forget(
        self, actor: Actor, company_id: uuid.UUID, issue_id: uuid.UUID
    ) -> WorkspaceView:
        """Stop sending the issue's runs to the host holding its worktree: the next run makes
        a new worktree (from the project's repository) on any runner. The old worktree and its
        branch stay on their host. Refused while a run of the issue is active."""
        async with company_writes(self.sessions, company_id) as session:
            view = await self._view(session, company_id, issue_id, for_update=True)
            row = view.row
            active = await session.scalar(
                select(
                    exists().where(
                        and_(Run.issue_id == issue_id, Run.status.in_(ACTIVE_RUN_STATUSES))
                    )
                )
            )
            if active:
                raise ConflictError(
                    "a run of this issue is active in its worktree; cancel it or let it end first",
                    code="run_active",
                )
            if row.status != WorkspaceStatus.RELEASED:
                row.status = WorkspaceStatus.RELEASED
                row.released_at = datetime.now(UTC)
                row.release_after = None
                row.error_code = FORGOTTEN
                row.error_message = (
                    f"forgotten by {actor.type}; the worktree and branch {row.branch} stay "
                    f"at {row.path or row.key} on runner {view.runner_name or row.runner_id}"
                )
                record_activity(
                    session,
                    actor,
                    "workspace.forgotten",
                    entity_type="issue",
                    entity_id=issue_id,
                    company_id=company_id,
                    details={"branch": row.branch, "runner_id": str(row.runner_id)},
                )
        return view

    async def _view(
        self, session: AsyncSession, company_id: uuid.UUID, issue_id: uuid.UUID, *, for_update: bool
    ) -> WorkspaceView:
        await get_scoped(session, Issue, company_id, issue_id, "issue", source="path")
        stmt = (
            select(IssueWorkspace, Runner.name, Project.name)
            .outerjoin(Runner, Runner.id == IssueWorkspace.runner_id)
            .outerjoin(Project, Project.id == IssueWorkspace.project_id)
            .where(IssueWorkspace.issue_id == issue_id, IssueWorkspace.company_id == company_id)
        )
        if for_update:
            stmt = stmt.with_for_update(of=IssueWorkspace)
        found = (await session.execute(stmt)).one_or_none()
        if found is None:
            raise NotFoundError(
                "this issue has no workspace: it belongs to no project, or no run of it "
                "started yet",
                code="workspace_not_found",
            )
        row, runner_name, project_name = found
        return WorkspaceView(row, runner_name, project_name)
