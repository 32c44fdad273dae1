"""Projects: a company's repositories, where its issues' worktrees come from."""

from __future__ import annotations

import uuid

from litestar import Controller, delete, get, patch, post

from paperclip.common.actor import Actor
from paperclip.domain.projects.projects import ProjectService
from paperclip.domain.projects.schemas import ProjectCreate, ProjectOut, ProjectUpdate
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.fields import changes
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor


class ProjectController(Controller):
    path = "/companies/{company_id:uuid}/projects"
    tags = ["projects"]

    @get("/", opt=access(Access.READ), responses=error_responses(404))
    async def list_projects(
        self,
        company_id: uuid.UUID,
        projects: ProjectService,
        pages: Pages,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[ProjectOut]:
        rows, end = await projects.list(company_id, after=pages.after(cursor), limit=limit)
        return pages.page([ProjectOut.of(r) for r in rows], end)

    @post(
        "/",
        opt=access(Access.MANAGE),
        responses=error_responses(404, 409, 422),
        description="Make a project. 409 ``project_name_taken``; 422 ``invalid_project_source`` "
        "(not exactly one of repo_path and repo_url), ``invalid_repo_path``, "
        "``invalid_repo_url``, ``invalid_branch_prefix``, ``invalid_default_branch``, "
        "``invalid_merge_strategy`` (not fast_forward or merge_commit), or "
        "``workspace_not_allowed`` (runner hosts said which folders or URLs they allow, and "
        "none allows this one).",
    )
    async def create_project(
        self, company_id: uuid.UUID, data: ProjectCreate, projects: ProjectService, actor: Actor
    ) -> ProjectOut:
        project = await projects.create(
            actor,
            company_id,
            name=data.name,
            description=data.description,
            repo_path=data.repo_path,
            repo_url=data.repo_url,
            default_branch=data.default_branch,
            branch_prefix=data.branch_prefix,
            hooks_enabled=data.hooks_enabled,
            merge_strategy=data.merge_strategy,
        )
        return ProjectOut.of(project)

    @get("/{project_id:uuid}", opt=access(Access.READ), responses=error_responses(404))
    async def get_project(
        self, company_id: uuid.UUID, project_id: uuid.UUID, projects: ProjectService
    ) -> ProjectOut:
        return ProjectOut.of(await projects.get(company_id, project_id))

    @patch(
        "/{project_id:uuid}",
        opt=access(Access.MANAGE),
        responses=error_responses(404, 409, 422),
        description="Change a project: its 422s are those of creation. Setting repo_path or "
        "repo_url replaces the other. 409 ``project_has_workspaces``: a new source or branch "
        "prefix while issues of the project have worktrees not yet released; "
        "``project_name_taken``.",
    )
    async def update_project(
        self,
        company_id: uuid.UUID,
        project_id: uuid.UUID,
        data: ProjectUpdate,
        projects: ProjectService,
        actor: Actor,
    ) -> ProjectOut:
        updated = await projects.update(actor, company_id, project_id, changes(data))
        return ProjectOut.of(updated)

    @delete(
        "/{project_id:uuid}",
        opt=access(Access.MANAGE),
        responses=error_responses(404, 409),
        description="Delete a project. 409 ``project_in_use`` while an issue of it is not done "
        "or cancelled; its ended issues are kept, without a project.",
    )
    async def delete_project(
        self, company_id: uuid.UUID, project_id: uuid.UUID, projects: ProjectService, actor: Actor
    ) -> None:
        await projects.delete(actor, company_id, project_id)
