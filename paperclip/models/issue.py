from __future__ import annotations

import uuid
from enum import StrEnum

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class IssueStatus(StrEnum):
    BACKLOG = "backlog"
    TODO = "todo"
    IN_PROGRESS = "in_progress"
    IN_REVIEW = "in_review"
    BLOCKED = "blocked"
    DONE = "done"
    CANCELLED = "cancelled"


class IssuePriority(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    URGENT = "urgent"


class Issue(UUIDPrimaryKey, Timestamps, Base):
    """A unit of work: the description is the assignment, the comments are its events."""

    __tablename__ = "issues"
    __table_args__ = (UniqueConstraint("company_id", "number"),)

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    number: Mapped[int]
    identifier: Mapped[str] = mapped_column(String(32))
    """``<prefix>-<number>``, unique within the company."""
    title: Mapped[str] = mapped_column(String(500))
    description: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(20), default=IssueStatus.TODO)
    priority: Mapped[str] = mapped_column(String(20), default=IssuePriority.MEDIUM)
    assignee_agent_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), index=True
    )
    parent_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("issues.id", ondelete="SET NULL"), index=True
    )
    """The issue it is a part of, in its company; no loop (the database refuses one)."""
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="SET NULL"), index=True
    )
    """Its project: its runs work in a worktree of the project's repository (None: a scratch folder)."""
