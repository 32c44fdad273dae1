from __future__ import annotations

import uuid
from typing import Annotated

from litestar import Controller, delete, get, patch, post
from litestar.params import Parameter

from paperclip.api.access import Access, access
from paperclip.api.cursors import Pages
from paperclip.api.errors import error_responses
from paperclip.api.pagination import Page
from paperclip.api.params import PAGE_SIZE_DEFAULT, Limit, PageCursor, Sort
from paperclip.api.schemas import (
    IssueCreate,
    IssueOut,
    IssuePriorityName,
    IssueStatusName,
    IssueUpdate,
    changes,
)
from paperclip.services.actor import Actor
from paperclip.services.issue_reads import IssueReads
from paperclip.services.issues import IssueService


class IssueController(Controller):
    path = "/companies/{company_id:uuid}/issues"
    tags = ["issues"]

    @get("/", opt=access(Access.READ), responses=error_responses(404))
    async def list_issues(
        self,
        company_id: uuid.UUID,
        issues: IssueService,
        pages: Pages,
        status: IssueStatusName | None = None,
        assignee_agent_id: uuid.UUID | None = None,
        parent_id: uuid.UUID | None = None,
        project_id: uuid.UUID | None = None,
        priority: IssuePriorityName | None = None,
        q: Annotated[
            str | None,
            Parameter(
                max_length=200,
                description="Text in the title, the description or the identifier (any case).",
            ),
        ] = None,
        identifier: Annotated[
            str | None,
            Parameter(
                max_length=32,
                description="The issue's identifier (`PAP-1`, any case): at most one issue.",
            ),
        ] = None,
        sort: Sort = "created",
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[IssueOut]:
        pages = pages.sorted(sort)
        rows, end = await issues.list(
            company_id,
            status=status,
            assignee_agent_id=assignee_agent_id,
            parent_id=parent_id,
            project_id=project_id,
            priority=priority,
            q=q,
            identifier=identifier,
            after=pages.after(cursor),
            limit=limit,
            sort=sort,
        )
        return pages.page([IssueOut.of(r) for r in rows], end)

    @post("/", opt=access(Access.WRITE), responses=error_responses(404, 422))
    async def create_issue(
        self, company_id: uuid.UUID, data: IssueCreate, issues: IssueService, actor: Actor
    ) -> IssueOut:
        issue = await issues.create(
            actor,
            company_id,
            title=data.title,
            description=data.description,
            status=data.status,
            priority=data.priority,
            assignee_agent_id=data.assignee_agent_id,
            parent_id=data.parent_id,
            project_id=data.project_id,
        )
        return IssueOut.of(issue)

    @get("/{issue_id:uuid}", opt=access(Access.READ), responses=error_responses(404))
    async def get_issue(
        self, company_id: uuid.UUID, issue_id: uuid.UUID, issue_reads: IssueReads
    ) -> IssueOut:
        return IssueOut.of_columns(await issue_reads.issue(company_id, issue_id))

    @patch(
        "/{issue_id:uuid}",
        opt=access(Access.WRITE),
        responses=error_responses(404, 409, 422),
        description="Change an issue. 409 ``workspace_exists``: a new ``project_id`` while the "
        "issue's worktree, made from its project's repository, is not released yet.",
    )
    async def update_issue(
        self,
        company_id: uuid.UUID,
        issue_id: uuid.UUID,
        data: IssueUpdate,
        issues: IssueService,
        actor: Actor,
    ) -> IssueOut:
        return IssueOut.of(await issues.update(actor, company_id, issue_id, changes(data)))

    @delete("/{issue_id:uuid}", opt=access(Access.WRITE), responses=error_responses(404))
    async def delete_issue(
        self, company_id: uuid.UUID, issue_id: uuid.UUID, issues: IssueService, actor: Actor
    ) -> None:
        await issues.delete(actor, company_id, issue_id)
