"""The bodies of the issues routes: msgspec structs that Litestar validates and documents."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from paperclip.http.fields import Body, IdempotencyKey, LongText, Title
from paperclip.models import Comment, Issue

IssueStatusName = Literal[
    "backlog", "todo", "in_progress", "in_review", "blocked", "done", "cancelled"
]


IssuePriorityName = Literal["low", "medium", "high", "urgent"]


class IssueCreate(msgspec.Struct, forbid_unknown_fields=True):
    title: Title
    description: LongText = ""
    status: IssueStatusName = "todo"
    priority: IssuePriorityName = "medium"
    assignee_agent_id: uuid.UUID | None = None
    parent_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    """Its project; none given, the assignee's default project (if any)."""


class IssueUpdate(msgspec.Struct, forbid_unknown_fields=True):
    title: Title | UnsetType = UNSET
    description: LongText | UnsetType = UNSET
    status: IssueStatusName | UnsetType = UNSET
    priority: IssuePriorityName | UnsetType = UNSET
    assignee_agent_id: uuid.UUID | UnsetType | None = UNSET
    parent_id: uuid.UUID | UnsetType | None = UNSET
    project_id: uuid.UUID | UnsetType | None = UNSET
    even_with_open_parts: bool | UnsetType = UNSET
    """With ``status: done``: close it although parts of it are open (a person only; an
    agent's run token is refused, ``409 issue_parts_open``)."""


class IssueOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    identifier: str
    number: int
    title: str
    description: str
    status: IssueStatusName
    priority: IssuePriorityName
    assignee_agent_id: uuid.UUID | None
    parent_id: uuid.UUID | None
    project_id: uuid.UUID | None
    """Its runs work in a worktree of this project's repository (null: a scratch folder)."""
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Issue) -> IssueOut:
        return msgspec.convert(row, cls, from_attributes=True)

    @classmethod
    def of_columns(cls, columns: Mapping[str, Any]) -> IssueOut:
        """From the columns of a plain read (``paperclip.domain.issues.issue_reads``)."""
        return cls(**columns)


class CommentCreate(msgspec.Struct, forbid_unknown_fields=True):
    body: Body
    idempotency_key: IdempotencyKey | None = None


class CommentUpdate(msgspec.Struct, forbid_unknown_fields=True):
    body: Body


class CommentOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    issue_id: uuid.UUID
    author_agent_id: uuid.UUID | None
    author_user_id: str | None
    body: str
    revision: str
    created_by_run_id: uuid.UUID | None
    edited_at: datetime | None
    deleted_at: datetime | None
    created_at: datetime

    @classmethod
    def of(cls, row: Comment) -> CommentOut:
        return msgspec.convert(row, cls, from_attributes=True)

    @classmethod
    def of_columns(cls, columns: Iterable[Any]) -> CommentOut:
        """From a row of a plain read, its columns in the order of these fields.

        ``paperclip.domain.issues.issue_reads.COMMENT_COLUMNS`` selects them so (a test
        pins it): a page is 50 of these, and by position is the cheapest way in.
        """
        return cls(*columns)
