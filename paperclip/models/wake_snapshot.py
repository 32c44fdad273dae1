from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Identity,
    String,
    UniqueConstraint,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, UUIDPrimaryKey


class WakeCommentSnapshot(UUIDPrimaryKey, Base):
    """The exact accepted comments a run was woken for, recorded with the run (seed 000).

    Every current wake comment is listed (``WakeSnapshotComment``), not only
    the window the prompt rendered. ``read_required`` says whether the run must
    read them all (``read_current_wake_comments``) before its report is accepted.
    """

    __tablename__ = "wake_snapshots"

    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    run_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), unique=True
    )
    issue_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("issues.id", ondelete="CASCADE"))
    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    revision: Mapped[str] = mapped_column(String(64))
    """The snapshot's revision when the run was created (see ``engine.snapshot``)."""
    comment_count: Mapped[int]
    read_required: Mapped[bool]
    read_reason: Mapped[str | None] = mapped_column(String(40))
    """Why a read is required: ``omitted``, ``truncated`` (by the prompt) or ``chat``."""
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class WakeSnapshotComment(Base):
    """One comment of a wake snapshot, at its position, with the revision accepted at the wake."""

    __tablename__ = "wake_snapshot_comments"
    __table_args__ = (UniqueConstraint("snapshot_id", "comment_id"),)

    snapshot_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("wake_snapshots.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(primary_key=True)
    """1-based, oldest first: the order the reader pages in."""
    comment_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("comments.id", ondelete="CASCADE"))
    revision: Mapped[str] = mapped_column(String(64))


class WakeCommentRead(Base):
    """A read receipt: one page of a wake snapshot read by a run, at a snapshot revision.

    Bound to the run, company, task and agent that read it; a guard refuses
    another binding's receipt as foreign. One row per run and page of a
    snapshot revision (a unique constraint): a page is recorded exactly once.
    """

    __tablename__ = "wake_comment_reads"
    __table_args__ = (
        UniqueConstraint("snapshot_id", "run_id", "snapshot_revision", "page"),
        CheckConstraint("page >= 1", name="page_positive"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    snapshot_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("wake_snapshots.id", ondelete="CASCADE")
    )
    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    issue_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("issues.id", ondelete="CASCADE"))
    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    snapshot_revision: Mapped[str] = mapped_column(String(64))
    """The snapshot's revision when this page was read."""
    page: Mapped[int]
    complete: Mapped[bool]
    """This was the last page: with the pages before it, the whole snapshot was read."""
    next_cursor: Mapped[str | None] = mapped_column(String(200))
    """The cursor that continues after this page (None on the last page)."""
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
