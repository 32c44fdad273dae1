from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, DateTime, ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey
from paperclip.revisions import revision


def body_revision(body: str) -> str:
    """sha256 of the trimmed, sanitized body: evidence of the exact text a run saw.

    The same function names a comment in ``paperclipTurnContext``, so a stored
    revision and a rendered one always agree.
    """
    return revision(body)


class Comment(UUIDPrimaryKey, Timestamps, Base):
    """A comment on an issue, by an agent or a user."""

    __tablename__ = "comments"
    __table_args__ = (
        CheckConstraint("(author_agent_id IS NULL) <> (author_user_id IS NULL)", name="one_author"),
        # A retried post with the same key is the first comment, never a second one.
        Index(
            "uq_comments_key",
            "issue_id",
            "idempotency_key",
            unique=True,
            postgresql_where=text("idempotency_key IS NOT NULL"),
        ),
    )

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    issue_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("issues.id", ondelete="CASCADE"), index=True
    )
    author_agent_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL")
    )
    author_user_id: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)
    revision: Mapped[str] = mapped_column(String(64))
    created_by_run_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL")
    )
    edited_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    """The author's key for the post (optional): a retry with it finds this comment."""
