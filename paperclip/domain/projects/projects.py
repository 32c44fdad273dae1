"""Projects: a company's repositories, where its issues' worktrees come from."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import Cursor, get_scoped, keyset_page
from paperclip.domain.companies.companies import company_writes, require_company
from paperclip.domain.projects.project_sources import (
    Source,
    check_branches,
    check_door,
    check_merge_strategy,
    check_source,
    source_after,
)
from paperclip.errors import ConflictError, FieldSource, NotFoundError
from paperclip.models import (
    DEFAULT_BRANCH_PREFIX,
    DEFAULT_MERGE_STRATEGY,
    Agent,
    Issue,
    IssueStatus,
    IssueWorkspace,
    Project,
    WorkspaceStatus,
)

ENDED = (IssueStatus.DONE, IssueStatus.CANCELLED)
"""An issue in one of these no longer keeps its project from being deleted."""


async def project_ref(
    session: AsyncSession,
    company_id: uuid.UUID,
    project_id: uuid.UUID,
    *,
    field: str,
    source: FieldSource = "body",
) -> Project:
    """The company's project a field refers to, or ``422 project_not_found`` naming the field.

    A body's reference is locked ``FOR KEY SHARE`` (what the foreign key will take
    anyway): a deletion of the project waits for this transaction, then sees what
    it wrote. A query's (a list filter) is only read.
    """
    project = await find_project(session, company_id, project_id, lock=source == "body")
    if project is None:
        raise NotFoundError.of("project", project_id, field=field, source=source)
    return project


async def find_project(
    session: AsyncSession, company_id: uuid.UUID, project_id: uuid.UUID, *, lock: bool = True
) -> Project | None:
    """The company's project with this id (locked ``FOR KEY SHARE`` unless told not to), or None."""
    stmt = select(Project).where(Project.id == project_id, Project.company_id == company_id)
    if lock:
        stmt = stmt.with_for_update(read=True, key_share=True)
    return (await session.execute(stmt)).scalar_one_or_none()


async def live_workspace(session: AsyncSession, issue_id: uuid.UUID) -> IssueWorkspace | None:
    """The issue's worktree, unless it was released (its runs still work in it)."""
    stmt = select(IssueWorkspace).where(
        IssueWorkspace.issue_id == issue_id, IssueWorkspace.status != WorkspaceStatus.RELEASED
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def default_project(
    session: AsyncSession, company_id: uuid.UUID, agent: Agent
) -> uuid.UUID | None:
    """The agent's default project, if it still exists (locked like any project reference)."""
    if agent.default_project_id is None:
        return None
    project = await find_project(session, company_id, agent.default_project_id)
    return project.id if project is not None else None


async def default_projects(
    session: AsyncSession, agent_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, uuid.UUID]:
    """``default_project`` of each of the agents that has one still, in one statement: agent
    id -> project id."""
    if not agent_ids:
        return {}
    rows = await session.execute(
        select(Agent.id, Project.id)
        .join(
            Project,
            and_(Project.id == Agent.default_project_id, Project.company_id == Agent.company_id),
        )
        .where(Agent.id.in_(agent_ids))
        .with_for_update(of=Project, read=True, key_share=True)
    )
    return {agent_id: project_id for agent_id, project_id in rows.all()}


async def project_on_assignment(
    session: AsyncSession, issue: Issue, agent: Agent
) -> uuid.UUID | None:
    """The project an issue without one takes when it is assigned to ``agent``, or None.

    The agent's default project; none when the issue has a project already, or
    still has a worktree of an earlier one (it stays as it is).
    """
    if issue.project_id is not None:
        return None
    project_id = await default_project(session, issue.company_id, agent)
    if project_id is None or await live_workspace(session, issue.id) is not None:
        return None
    return project_id


class ProjectService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def create(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        *,
        name: str,
        description: str = "",
        repo_path: str | None = None,
        repo_url: str | None = None,
        default_branch: str | None = None,
        branch_prefix: str = DEFAULT_BRANCH_PREFIX,
        hooks_enabled: bool = False,
        merge_strategy: str = DEFAULT_MERGE_STRATEGY,
    ) -> Project:
        """Create a project; its source, branches and merge strategy are checked first (422
        naming the field)."""
        source = source_after(None, {"repo_path": repo_path, "repo_url": repo_url})
        check_source(source)
        check_branches({"branch_prefix": branch_prefix, "default_branch": default_branch})
        check_merge_strategy({"merge_strategy": merge_strategy})
        try:
            async with company_writes(self.sessions, company_id) as session:
                await require_company(session, company_id)
                await check_door(session, source)
                project = Project(
                    id=uuid.uuid4(),
                    company_id=company_id,
                    name=name,
                    description=description,
                    repo_path=source.repo_path,
                    repo_url=source.repo_url,
                    default_branch=default_branch,
                    branch_prefix=branch_prefix,
                    hooks_enabled=hooks_enabled,
                    merge_strategy=merge_strategy,
                )
                session.add(project)
                await session.flush()
                record_activity(
                    session,
                    actor,
                    "project.created",
                    entity_type="project",
                    entity_id=project.id,
                    company_id=company_id,
                    details={"name": name},
                )
        except IntegrityError as exc:
            raise _name_taken(name) from exc
        return project

    async def get(self, company_id: uuid.UUID, project_id: uuid.UUID) -> Project:
        async with self.sessions() as session:
            return await get_scoped(session, Project, company_id, project_id, "project")

    async def list(
        self, company_id: uuid.UUID, *, after: Cursor | None, limit: int
    ) -> tuple[list[Project], Cursor | None]:
        async with self.sessions() as session:
            await require_company(session, company_id)
            stmt = select(Project).where(Project.company_id == company_id)
            return await keyset_page(session, stmt, Project, after, limit)

    async def update(
        self, actor: Actor, company_id: uuid.UUID, project_id: uuid.UUID, changes: dict[str, Any]
    ) -> Project:
        """Change a project. Its source and branch prefix stay while worktrees made from them live.

        Name, description, default branch (for worktrees made from now on), hooks and
        merge strategy may change at any time.
        """
        check_branches(changes)
        check_merge_strategy(changes)
        try:
            async with company_writes(self.sessions, company_id) as session:
                project = await get_scoped(
                    session, Project, company_id, project_id, "project", for_update=True
                )
                current = Source(project.repo_path, project.repo_url)
                source = source_after(current, changes)
                check_source(source)
                if source != current:
                    await check_door(session, source)
                prefix = changes.get("branch_prefix", project.branch_prefix)
                moved = source != current or prefix != project.branch_prefix
                if moved and await self._has_live_workspaces(session, project):
                    raise ConflictError(
                        "issues of this project have worktrees made from its current source and "
                        "branch prefix; its source and branch prefix can change once they are "
                        "released (the issues done or cancelled), or make a new project",
                        code="project_has_workspaces",
                    )
                if source != current:
                    changes = changes | {"repo_path": source.repo_path, "repo_url": source.repo_url}
                for field, value in changes.items():
                    setattr(project, field, value)
                await session.flush()
                record_activity(
                    session,
                    actor,
                    "project.updated",
                    entity_type="project",
                    entity_id=project.id,
                    company_id=company_id,
                    details={"fields": sorted(changes)},
                )
        except IntegrityError as exc:
            raise _name_taken(changes.get("name", "")) from exc
        return project

    async def delete(self, actor: Actor, company_id: uuid.UUID, project_id: uuid.UUID) -> None:
        """Delete a project none of whose issues is still open; its ended issues lose it."""
        async with company_writes(self.sessions, company_id) as session:
            # FOR UPDATE: an issue being put in the project (FOR KEY SHARE) commits first,
            # and the count below sees it.
            project = await get_scoped(
                session, Project, company_id, project_id, "project", for_update=True
            )
            open_issues, ended_issues = (
                await session.execute(
                    select(
                        func.count().filter(Issue.status.not_in(ENDED)),
                        func.count().filter(Issue.status.in_(ENDED)),
                    ).where(Issue.company_id == company_id, Issue.project_id == project_id)
                )
            ).one()
            if open_issues:
                raise ConflictError(
                    f"{open_issues} issue(s) of this project are not done or cancelled; "
                    "finish, cancel or move them to another project first",
                    code="project_in_use",
                )
            # The ended issues are detached by the foreign key (ON DELETE SET NULL).
            await session.delete(project)
            record_activity(
                session,
                actor,
                "project.deleted",
                entity_type="project",
                entity_id=project_id,
                company_id=company_id,
                details={"name": project.name, "detached_issues": ended_issues},
            )

    @staticmethod
    async def _has_live_workspaces(session: AsyncSession, project: Project) -> bool:
        stmt = (
            select(IssueWorkspace.issue_id)
            .join(Issue, Issue.id == IssueWorkspace.issue_id)
            .where(
                IssueWorkspace.company_id == project.company_id,
                IssueWorkspace.status != WorkspaceStatus.RELEASED,
                or_(Issue.project_id == project.id, IssueWorkspace.project_id == project.id),
            )
            .limit(1)
        )
        return (await session.execute(stmt)).first() is not None


def _name_taken(name: str) -> ConflictError:
    return ConflictError(
        f"a project named {name!r} already exists in this company", code="project_name_taken"
    )
