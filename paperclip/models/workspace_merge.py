"""A request to merge an issue's branch into its base branch, and the runner's answer."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import CheckConstraint, DateTime, ForeignKey, Index, String, Text, func, text
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base


class MergeStatus(StrEnum):
    PENDING = "pending"
    """Sent to the runner holding the worktree; no answer yet."""
    MERGED = "merged"
    REFUSED = "refused"
    """Not merged, and nothing changed (``error_code`` says why)."""


class WorkspaceMerge(Base):
    """One merge of an issue's branch, asked of the runner holding its worktree.

    Exactly once by the database: one pending request per issue, and one merge
    per (issue, branch head). A second request for the same head finds the row
    and answers what it says, once the runner has answered. A refused request
    holds nothing: the next request asks the runner again.
    """

    __tablename__ = "workspace_merges"
    __table_args__ = (
        Index(
            "uq_workspace_merges_pending",
            "issue_id",
            unique=True,
            postgresql_where=text("status = 'pending'"),
        ),
        Index(
            "uq_workspace_merges_head",
            "issue_id",
            "head_commit",
            unique=True,
            postgresql_where=text("status = 'merged'"),
        ),
        CheckConstraint("status IN ('pending', 'merged', 'refused')", name="status"),
        CheckConstraint("strategy IN ('fast_forward', 'merge_commit')", name="strategy"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    """The request id the runner answers with."""
    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    issue_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("issues.id", ondelete="CASCADE"), index=True
    )
    runner_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("runners.id", ondelete="SET NULL")
    )
    """The runner asked: only its answer counts."""
    status: Mapped[str] = mapped_column(String(20), server_default=MergeStatus.PENDING)
    strategy: Mapped[str] = mapped_column(String(20), server_default="fast_forward")
    branch: Mapped[str] = mapped_column(String(255))
    base_ref: Mapped[str | None] = mapped_column(String(255))
    """The base branch as the worktree records it (None: the repository's HEAD branch)."""
    head_commit: Mapped[str] = mapped_column(String(64))
    """The branch's head the request was made for (as the control plane last saw it)."""
    close_issue: Mapped[bool] = mapped_column(server_default=text("false"))
    actor_type: Mapped[str] = mapped_column(String(20))
    actor_id: Mapped[str] = mapped_column(String(200))
    """Who asked: the merge's activity is theirs."""
    commit: Mapped[str | None] = mapped_column(String(64))
    """The base branch's commit after the merge."""
    merged_head: Mapped[str | None] = mapped_column(String(64))
    """The branch's head the runner merged."""
    merged_commits: Mapped[int | None] = mapped_column()
    conflicts: Mapped[list[Any] | None] = mapped_column()
    files: Mapped[list[Any] | None] = mapped_column()
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    sent_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    """When the request was last put in the runner's outbox (sent again when it went unanswered)."""
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
