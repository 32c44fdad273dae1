"""Comments: the events of an issue. A comment on an assigned issue wakes its agent."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import get_scoped
from paperclip.domain.companies.companies import company_writes
from paperclip.domain.runs.wakes import request_wake
from paperclip.errors import ConflictError, ForbiddenError, NotFoundError
from paperclip.models import Comment, Issue
from paperclip.models.comment import body_revision

IDEMPOTENCY_KEY_REUSED = "idempotency_key_reused"


@dataclass(frozen=True, slots=True)
class Posted:
    comment: Comment
    replayed: bool = False
    """The idempotency key's first comment: nothing was written again."""


class CommentService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def create(
        self, actor: Actor, company_id: uuid.UUID, issue_id: uuid.UUID, *, body: str
    ) -> Comment:
        return (await self.post(actor, company_id, issue_id, body=body)).comment

    async def post(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        issue_id: uuid.UUID,
        *,
        body: str,
        idempotency_key: str | None = None,
    ) -> Posted:
        """Post a comment. With an ``idempotency_key`` used before on the issue, it is that
        first comment again (same author and body) or a conflict.

        Two posts with one key at once: the unique index makes the second wait for the
        first and then fail; its second attempt finds the first comment.
        """
        for attempt in range(2):
            try:
                async with company_writes(self.sessions, company_id) as session:
                    if idempotency_key is not None:
                        first = await _keyed(session, company_id, issue_id, idempotency_key)
                        if first is not None:
                            return Posted(_replayable(first, actor, body), replayed=True)
                    comment = await add_comment(
                        session, actor, company_id, issue_id, body=body, key=idempotency_key
                    )
                    return Posted(comment)
            except IntegrityError:
                if idempotency_key is None or attempt:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def edit(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        issue_id: uuid.UUID,
        comment_id: uuid.UUID,
        *,
        body: str,
    ) -> Comment:
        async with company_writes(self.sessions, company_id) as session:
            comment = await self._own_comment(session, actor, company_id, issue_id, comment_id)
            if comment.deleted_at is not None:
                raise ConflictError("a deleted comment cannot be edited", code="comment_deleted")
            if comment.body != body:
                comment.body = body
                comment.revision = body_revision(body)
                comment.edited_at = datetime.now(UTC)
                record_activity(
                    session,
                    actor,
                    "comment.edited",
                    entity_type="comment",
                    entity_id=comment.id,
                    company_id=company_id,
                    details={"issue_id": str(issue_id), "revision": comment.revision},
                )
        return comment

    async def delete(
        self, actor: Actor, company_id: uuid.UUID, issue_id: uuid.UUID, comment_id: uuid.UUID
    ) -> Comment:
        async with company_writes(self.sessions, company_id) as session:
            comment = await self._own_comment(session, actor, company_id, issue_id, comment_id)
            if comment.deleted_at is None:
                comment.deleted_at = datetime.now(UTC)
                comment.body = ""
                comment.revision = body_revision("")
                record_activity(
                    session,
                    actor,
                    "comment.deleted",
                    entity_type="comment",
                    entity_id=comment.id,
                    company_id=company_id,
                    details={"issue_id": str(issue_id)},
                )
        return comment

    async def _own_comment(
        self,
        session: AsyncSession,
        actor: Actor,
        company_id: uuid.UUID,
        issue_id: uuid.UUID,
        comment_id: uuid.UUID,
    ) -> Comment:
        comment = await get_scoped(
            session, Comment, company_id, comment_id, "comment", for_update=True
        )
        if comment.issue_id != issue_id:
            raise NotFoundError.of("comment", comment_id)
        if actor.type == "agent" and str(comment.author_agent_id) != actor.id:
            raise ForbiddenError("an agent may change only its own comments")
        return comment


async def add_comment(
    session: AsyncSession,
    actor: Actor,
    company_id: uuid.UUID,
    issue_id: uuid.UUID,
    *,
    body: str,
    command_id: uuid.UUID | None = None,
    key: str | None = None,
) -> Comment:
    """Write a comment in the caller's transaction and wake the assignee when someone else wrote.

    ``key`` is the author's idempotency key (``CommentService.post`` checks it first).
    """
    issue = await get_scoped(session, Issue, company_id, issue_id, "issue")
    by_agent = actor.type == "agent"
    comment = Comment(
        id=command_id or uuid.uuid4(),
        company_id=company_id,
        issue_id=issue_id,
        author_agent_id=uuid.UUID(actor.id) if by_agent else None,
        author_user_id=None if by_agent else actor.id,
        body=body,
        revision=body_revision(body),
        created_by_run_id=actor.run_id,
        idempotency_key=key,
    )
    session.add(comment)
    await session.flush()
    record_activity(
        session,
        actor,
        "comment.created",
        entity_type="comment",
        entity_id=comment.id,
        company_id=company_id,
        details={"issue_id": str(issue_id)},
    )
    if issue.assignee_agent_id is not None and str(issue.assignee_agent_id) != (
        actor.id if by_agent else None
    ):
        await request_wake(
            session,
            actor,
            company_id=company_id,
            agent_id=issue.assignee_agent_id,
            issue_id=issue_id,
            source="comment",
            reason="new comment",
            payload={"comment_id": str(comment.id)},
        )
    return comment


async def _keyed(
    session: AsyncSession, company_id: uuid.UUID, issue_id: uuid.UUID, key: str
) -> Comment | None:
    return await session.scalar(
        select(Comment).where(
            Comment.company_id == company_id,
            Comment.issue_id == issue_id,
            Comment.idempotency_key == key,
        )
    )


def _replayable(first: Comment, actor: Actor, body: str) -> Comment:
    """The key's first comment when this post is its retry: the same author, and the same
    body unless the comment was edited or deleted since (its first body is gone)."""
    by_agent = actor.type == "agent"
    author = str(first.author_agent_id) if by_agent else first.author_user_id
    changed = first.edited_at is not None or first.deleted_at is not None
    if author != actor.id or (first.body != body and not changed):
        raise ConflictError(
            "this idempotency_key was used for another comment on this issue; "
            "use a new key for a new comment",
            code=IDEMPOTENCY_KEY_REUSED,
            field="idempotency_key",
        )
    return first


async def issue_comments(session: AsyncSession, issue_id: uuid.UUID) -> list[Comment]:
    """The issue's comments that are not deleted, oldest first: what a run reads and is woken for."""
    rows = await session.execute(
        select(Comment)
        .where(Comment.issue_id == issue_id, Comment.deleted_at.is_(None))
        .order_by(Comment.created_at, Comment.id)
    )
    return list(rows.scalars())
