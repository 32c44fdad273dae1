from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from paperclip.common.actor import Actor
from paperclip.domain.issues.comments import CommentService
from paperclip.domain.issues.issue_reads import IssueReads
from paperclip.domain.issues.issue_refs import ISSUE_IN_PATH
from paperclip.domain.issues.schemas import CommentCreate, CommentOut, CommentUpdate
from paperclip.http.access import Access, access
from paperclip.http.cursors import provide_pages
from paperclip.http.errors import error_responses
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor


class CommentController(Controller):
    path = "/companies/{company_id:uuid}/issues/{issue_id:str}/comments"
    tags = ["comments"]
    dependencies = ISSUE_IN_PATH

    @get("/", opt=access(Access.READ), responses=error_responses(404))
    async def list_comments(
        self,
        company_id: uuid.UUID,
        issue_uuid: uuid.UUID,
        issue_reads: IssueReads,
        request: Request[Any, Any, Any],
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[CommentOut]:
        # The API's most frequent read takes no independent dependencies: Litestar resolves
        # two that do not depend on each other in a task group, a tenth of this request's
        # cost. ``issue_uuid`` needs ``issue_reads``, so each is resolved alone, in turn.
        pages = provide_pages(request)
        rows, end = await issue_reads.comments(
            company_id, issue_uuid, after=pages.after(cursor), limit=limit
        )
        return pages.page([CommentOut.of_columns(r) for r in rows], end)

    @post("/", opt=access(Access.WRITE), responses=error_responses(404, 409))
    async def create_comment(
        self,
        company_id: uuid.UUID,
        issue_uuid: uuid.UUID,
        data: CommentCreate,
        comments: CommentService,
        actor: Actor,
    ) -> Response[CommentOut]:
        """``201`` a new comment; ``200`` the ``idempotency_key``'s first comment, nothing
        written again; ``409 idempotency_key_reused`` when the key was used for another."""
        posted = await comments.post(
            actor, company_id, issue_uuid, body=data.body, idempotency_key=data.idempotency_key
        )
        status = HTTP_200_OK if posted.replayed else HTTP_201_CREATED
        return Response(CommentOut.of(posted.comment), status_code=status)

    @patch("/{comment_id:uuid}", opt=access(Access.WRITE), responses=error_responses(404, 409))
    async def edit_comment(
        self,
        company_id: uuid.UUID,
        issue_uuid: uuid.UUID,
        comment_id: uuid.UUID,
        data: CommentUpdate,
        comments: CommentService,
        actor: Actor,
    ) -> CommentOut:
        comment = await comments.edit(actor, company_id, issue_uuid, comment_id, body=data.body)
        return CommentOut.of(comment)

    @delete(
        "/{comment_id:uuid}",
        status_code=HTTP_200_OK,
        opt=access(Access.WRITE),
        responses=error_responses(404),
    )
    async def delete_comment(
        self,
        company_id: uuid.UUID,
        issue_uuid: uuid.UUID,
        comment_id: uuid.UUID,
        comments: CommentService,
        actor: Actor,
    ) -> CommentOut:
        return CommentOut.of(await comments.delete(actor, company_id, issue_uuid, comment_id))
