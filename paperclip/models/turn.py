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

from paperclip.db.base import Base


class TurnStatus(StrEnum):
    STARTING = "starting"
    """Its ``start_turn`` is queued or on its way; no provider reported yet."""
    RUNNING = "running"
    """The runner started it (its provider session may be known)."""
    COMPLETED = "completed"
    FAILED = "failed"
    LOST = "lost"
    """Its runner or provider process went away mid-turn: the run resumes in a next turn."""

    @property
    def active(self) -> bool:
        return self in {TurnStatus.STARTING, TurnStatus.RUNNING}


class TurnKind(StrEnum):
    INITIAL = "initial"
    """The run's first turn: the full execution input."""
    CONTINUATION = "continuation"
    """A restart continuation (``paperclip.native-continuation.v1``) of the same session."""
    FRESH_RETRY = "fresh_retry"
    """A new session with the full brief again: the provider could not resume."""
    REPORT_NUDGE = "report_nudge"
    """The same session asked for its missing report: the turn before ended without one."""


class RunTurn(Base):
    """One provider turn of a run: from its input to its end (or its loss)."""

    __tablename__ = "run_turns"
    __table_args__ = (
        UniqueConstraint("run_id", "number"),
        # A run has at most one turn in flight, whatever replica starts it.
        Index(
            "uq_run_turns_active",
            "run_id",
            unique=True,
            postgresql_where=text("status IN ('starting', 'running')"),
        ),
        # The reconciler lists lost turns; history does not slow it down.
        Index("ix_run_turns_lost", "run_id", postgresql_where=text("status = 'lost'")),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    number: Mapped[int]
    """1 for the run's first turn, then 2, 3, ..."""
    kind: Mapped[str] = mapped_column(String(20), default=TurnKind.INITIAL)
    status: Mapped[str] = mapped_column(String(20), default=TurnStatus.STARTING)
    runner_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("runners.id", ondelete="SET NULL")
    )
    session_ref: Mapped[str | None] = mapped_column(String(200))
    """The provider session the turn runs in, once known (resumed or reported)."""
    provider_turn_id: Mapped[str | None] = mapped_column(String(200))
    """The provider's own id of the turn (a Codex turn id), once it ended."""
    input_schema: Mapped[str | None] = mapped_column(String(100))
    input: Mapped[dict[str, Any] | None] = mapped_column()
    """A continuation's input (the first turn's is the run's execution input)."""
    error_code: Mapped[str | None] = mapped_column(String(100))
    error_message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
