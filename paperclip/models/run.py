from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    BigInteger,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED}


ACTIVE_RUN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)
"""A run in one of these holds its issue (one active run per issue) and has a controller."""


class Run(UUIDPrimaryKey, Timestamps, Base):
    """One attempt of an agent on an issue, ending in a terminal status exactly once."""

    __tablename__ = "runs"
    __table_args__ = (
        # One active run per issue, whatever replica created it.
        Index(
            "uq_runs_active_issue",
            "issue_id",
            unique=True,
            postgresql_where=text("status IN ('queued', 'running') AND issue_id IS NOT NULL"),
        ),
        # Recovery and resumption look at active runs only: history does not slow them.
        Index(
            "ix_runs_active_lease",
            "lease_expires_at",
            postgresql_where=text("status IN ('queued', 'running')"),
        ),
        Index(
            "ix_runs_resuming",
            "resumable_since",
            postgresql_where=text("phase = 'resuming'"),
        ),
        # Presentation recovery looks at answers not presented yet only.
        Index(
            "ix_runs_unpresented",
            "finished_at",
            postgresql_where=text(
                "status = 'succeeded' AND presentation IS NULL AND answer IS NOT NULL"
            ),
        ),
    )

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    agent_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), index=True
    )
    issue_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("issues.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[str] = mapped_column(String(20), default=RunStatus.QUEUED)
    phase: Mapped[str] = mapped_column(String(40), default="created")
    provider: Mapped[str] = mapped_column(String(100))
    session_ref: Mapped[str | None] = mapped_column(String(200))
    execution_input: Mapped[dict[str, Any] | None] = mapped_column()
    execution_input_schema: Mapped[str | None] = mapped_column(String(100))
    result: Mapped[dict[str, Any] | None] = mapped_column()
    """What the agent reported through ``finish`` or ``block``."""
    status_reason: Mapped[str | None] = mapped_column(String(100))
    """The committed status decision: why the run ended as it did (``task_completed``, ...)."""
    answer: Mapped[str | None] = mapped_column(Text)
    """The turn's final prose, saved with the status decision: what presentation may post."""
    presentation: Mapped[dict[str, Any] | None] = mapped_column()
    """The presentation decision, recorded once (``presentationDecision``, ``reason``, and the
    comment that presented the answer, if any)."""
    error_code: Mapped[str | None] = mapped_column(String(100))
    error_message: Mapped[str | None] = mapped_column(Text)
    controller_instance: Mapped[str | None] = mapped_column(String(200))
    controller_epoch: Mapped[int] = mapped_column(default=0)
    """The fence: every controller write names it and is refused once it moved."""
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """The controller renews this; once past, another replica may adopt the run."""
    runner_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("runners.id", ondelete="SET NULL"), index=True
    )
    wake_request_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("wake_requests.id", ondelete="SET NULL")
    )
    turn: Mapped[int] = mapped_column(default=0)
    """The number of its current (latest) turn; 0 before its first."""
    resume_attempts: Mapped[int] = mapped_column(default=0)
    """Turns started again after one was lost: bounded, then the task is held."""
    resumable_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """Set while the run waits for a runner to start its next turn (phase ``resuming``)."""
    last_event_seq: Mapped[int] = mapped_column(default=0)
    """The seq of the newest run event; bumped under the run's row lock."""
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    budget_stop_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """A budget of the run ran out: its next tool call is answered ``budget_exceeded``, and
    the run ends so once its turn does."""
    dismissed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """A person dismissed the failed run (once): it left the inbox."""
    dismissed_by: Mapped[str | None] = mapped_column(String(200))
    """Who dismissed it: the actor's id."""


class RunEvent(Base):
    """One entry of a run's durable, ordered log."""

    __tablename__ = "run_events"
    __table_args__ = (
        UniqueConstraint("run_id", "seq"),
        UniqueConstraint("run_id", "source_instance", "source_seq"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    seq: Mapped[int]
    """Position in the run's log, 1-based, gap-free."""
    type: Mapped[str] = mapped_column(String(100))
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    turn: Mapped[int] = mapped_column(default=1)
    """The turn the event belongs to: the one its runner names, else the run's turn when
    the event was stored."""
    source_instance: Mapped[str] = mapped_column(String(200))
    """Who produced the event (a runner instance, a controller); with ``source_seq``, the replay key."""
    source_seq: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
