from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import BigInteger, DateTime, ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps


class WorkspaceStatus(StrEnum):
    REQUESTED = "requested"
    """A run was sent to make (or use) it; no runner reported it ready yet."""
    READY = "ready"
    """The worktree exists on its runner host; every run of the issue works in it."""
    RELEASING = "releasing"
    """The issue ended and its retention passed: the runner was asked to remove it."""
    RELEASED = "released"
    """Removed (its branch kept, uncommitted changes saved to ``saved_ref``)."""


class IssueWorkspace(Timestamps, Base):
    """An issue's execution workspace: a git worktree on one runner host, on its own branch.

    One per issue (its primary key). The runs of the issue go to ``runner_id``
    while the worktree lives there; the latest work product (state and a
    size-capped diff against the base commit) is kept here for the API.
    """

    __tablename__ = "issue_workspaces"
    __table_args__ = (
        Index(
            "ix_issue_workspaces_release_after",
            "release_after",
            postgresql_where=text("status = 'ready' AND release_after IS NOT NULL"),
        ),
    )

    issue_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("issues.id", ondelete="CASCADE"), primary_key=True
    )
    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="SET NULL"), index=True
    )
    runner_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("runners.id", ondelete="SET NULL"), index=True
    )
    """The runner host holding the worktree."""
    status: Mapped[str] = mapped_column(String(20), default=WorkspaceStatus.REQUESTED)
    key: Mapped[str] = mapped_column(String(300))
    """Its folder under the runner's workspaces folder (``<company id>/<IDENTIFIER>``)."""
    branch: Mapped[str] = mapped_column(String(255))
    repo_path: Mapped[str | None] = mapped_column(Text)
    repo_url: Mapped[str | None] = mapped_column(Text)
    """The source it was made from (a copy of the project's at first use)."""
    base_ref: Mapped[str | None] = mapped_column(String(255))
    base_commit: Mapped[str | None] = mapped_column(String(64))
    hooks_enabled: Mapped[bool] = mapped_column(default=False)
    path: Mapped[str | None] = mapped_column(Text)
    """Where the worktree is on its runner host, as the runner reported it."""
    head_commit: Mapped[str | None] = mapped_column(String(64))
    state: Mapped[dict[str, Any] | None] = mapped_column()
    """The latest work product (``paperclip.wire.messages.WorkspaceState``)."""
    diff: Mapped[str | None] = mapped_column(Text)
    diff_truncated: Mapped[bool] = mapped_column(default=False)
    state_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    state_run_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL")
    )
    disk_bytes: Mapped[int | None] = mapped_column(BigInteger)
    release_after: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """When the worktree may be removed: the issue ended (done, cancelled) plus the retention."""
    saved_ref: Mapped[str | None] = mapped_column(String(255))
    """Where uncommitted changes went when the worktree was removed."""
    released_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
