"""Issues over HTTP: create, list, read, update, assign, close.

A run's way starts here (docs/runs.md tells it whole): an issue created with
an assignee, or assigned, goes to ``issues.py``, which queues a wake.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec
from litestar import Controller, delete, get, patch, post
from litestar.params import Parameter

from paperclip.common.actor import Actor
from paperclip.domain.issues.issue_reads import IssueReads
from paperclip.domain.issues.issue_refs import ISSUE_IN_PATH
from paperclip.domain.issues.issues import IssueService
from paperclip.domain.issues.schemas import (
    IssueCreate,
    IssueOut,
    IssuePriorityName,
    IssueStatusName,
    IssueUpdate,
)
from paperclip.domain.runs.live_state import LiveState
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.fields import changes
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor, Sort


class IssueLiveOut(msgspec.Struct):
    """What the issue is doing now, read in the list's own statement."""

    state: Literal["running", "waiting", "held", "failed", "idle"]
    """``running``: its latest run is queued or running; ``waiting``: a question, approval,
    stage or blocker waits on a person; ``held``: an active hold keeps it from running;
    ``failed``: its latest run failed and the issue is open (not dismissed); else ``idle``."""
    since: datetime | None
    """Since when: the run's start, the interaction's or hold's creation, the failure."""
    run_id: uuid.UUID | None
    """Its latest run, if any."""
    reason: str
    """One plain sentence: "The agent asks: Which team hires?"."""
    code: str | None
    """The code behind it: the run's error code, the hold's or interaction's kind, the run's
    status."""

    @classmethod
    def of(cls, live: LiveState) -> IssueLiveOut:
        return msgspec.convert(live, cls, from_attributes=True)


class IssueListItem(IssueOut):
    """An issue of a list, with its live state."""

    live: IssueLiveOut


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
    ) -> Page[IssueListItem]:
        """The company's issues, filtered; each with ``live``, what it is doing now (its
        latest run, what waits on a person, what holds it), read in the same statement."""
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
        items = [
            IssueListItem(**msgspec.structs.asdict(IssueOut.of(issue)), live=IssueLiveOut.of(live))
            for issue, live in rows
        ]
        return pages.page(items, end)

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

    @get(
        "/{issue_id:str}",
        opt=access(Access.READ),
        responses=error_responses(404),
        dependencies=ISSUE_IN_PATH,
    )
    async def get_issue(
        self, company_id: uuid.UUID, issue_uuid: uuid.UUID, issue_reads: IssueReads
    ) -> IssueOut:
        """The issue, by its id or its identifier (``PAP-1``, any case)."""
        return IssueOut.of_columns(await issue_reads.issue(company_id, issue_uuid))

    @patch(
        "/{issue_id:str}",
        opt=access(Access.WRITE),
        dependencies=ISSUE_IN_PATH,
        responses=error_responses(404, 409, 422),
        description="Change an issue. 409 ``workspace_exists``: a new ``project_id`` while the "
        "issue's worktree, made from its project's repository, is not released yet.",
    )
    async def update_issue(
        self,
        company_id: uuid.UUID,
        issue_uuid: uuid.UUID,
        data: IssueUpdate,
        issues: IssueService,
        actor: Actor,
    ) -> IssueOut:
        return IssueOut.of(await issues.update(actor, company_id, issue_uuid, changes(data)))

    @delete(
        "/{issue_id:str}",
        opt=access(Access.WRITE),
        responses=error_responses(404),
        dependencies=ISSUE_IN_PATH,
    )
    async def delete_issue(
        self, company_id: uuid.UUID, issue_uuid: uuid.UUID, issues: IssueService, actor: Actor
    ) -> None:
        await issues.delete(actor, company_id, issue_uuid)
