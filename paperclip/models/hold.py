from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class HoldStatus(StrEnum):
    ACTIVE = "active"
    """The task starts no run while it stands."""
    RESOLVED = "resolved"


class HoldSetter(StrEnum):
    SYSTEM = "system"
    OPERATOR = "operator"


class TaskHold(UUIDPrimaryKey, Timestamps, Base):
    """A block on a task: while active, a wake of the task starts no run."""

    __tablename__ = "task_holds"
    __table_args__ = (
        Index("ix_task_holds_active", "issue_id", postgresql_where=text("status = 'active'")),
        Index(
            "ix_task_holds_no_replay",
            "run_id",
            postgresql_where=text("status = 'active' AND replay_forbidden"),
        ),
    )

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    issue_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("issues.id", ondelete="CASCADE"))
    run_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    kind: Mapped[str] = mapped_column(String(100))
    """What set it, as a code: ``run_retries_exhausted``, ``operator_hold``, ..."""
    reason: Mapped[str] = mapped_column(Text)
    """For people: what happened and what to do about it."""
    set_by: Mapped[str] = mapped_column(String(20), default=HoldSetter.SYSTEM)
    set_by_actor: Mapped[str] = mapped_column(String(200))
    replay_forbidden: Mapped[bool] = mapped_column(default=False)
    """Work whose outcome is unknown must not be replayed while it stands."""
    status: Mapped[str] = mapped_column(String(20), default=HoldStatus.ACTIVE)
    resolution: Mapped[str | None] = mapped_column(String(100))
    """How it was resolved: ``released`` (an operator), ``restored`` (recovery), ..."""
    resolved_by: Mapped[str | None] = mapped_column(String(20))
    resolved_by_actor: Mapped[str | None] = mapped_column(String(200))
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)
