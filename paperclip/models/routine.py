from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    DateTime,
    ForeignKey,
    Index,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class Concurrency(StrEnum):
    """What a new slot does while an earlier execution's issue is still open."""

    SKIP_IF_OPEN = "skip_if_open"
    """Recorded as skipped (``open_execution``): nothing is created."""
    QUEUE = "queue"
    """Recorded as queued: its issue is made, and its agent woken, once the open ones closed."""
    ALLOW = "allow"
    """Runs now, beside the open ones."""


class CatchUp(StrEnum):
    """What the scheduler does with cron slots it finds late (past the grace) after downtime."""

    SKIP_MISSED = "skip_missed"
    RUN_LATEST_ONCE = "run_latest_once"
    RUN_ALL = "run_all"
    """Every missed slot runs, the latest ``catch_up_cap`` of them."""


class Trigger(StrEnum):
    CRON = "cron"
    WEBHOOK = "webhook"
    MANUAL = "manual"


class ExecutionStatus(StrEnum):
    STARTED = "started"
    """Its issue was made and its agent woken."""
    QUEUED = "queued"
    """Waiting for the routine's open executions to close (concurrency ``queue``)."""
    SKIPPED = "skipped"
    """Not run, with a ``reason``; the slot is spent."""


class Routine(UUIDPrimaryKey, Timestamps, Base):
    """An issue template and its triggers: a cron schedule, a signed webhook, and a call."""

    __tablename__ = "routines"
    __table_args__ = (
        UniqueConstraint("company_id", "name"),
        # The scheduler's question: which enabled cron routines are due.
        Index(
            "ix_routines_due",
            "next_slot_at",
            postgresql_where=text("enabled AND cron IS NOT NULL"),
        ),
    )

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    agent_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), index=True
    )
    """The assignee of every issue it makes."""
    title: Mapped[str] = mapped_column(String(500))
    """The issue's title template (placeholders: docs/routines.md)."""
    description: Mapped[str] = mapped_column(Text, default="")
    priority: Mapped[str] = mapped_column(String(20), default="medium")
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="SET NULL"), index=True
    )
    enabled: Mapped[bool] = mapped_column(default=True)
    cron: Mapped[str | None] = mapped_column(String(200))
    """Five fields; None: no schedule (webhook and calls only)."""
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    concurrency: Mapped[str] = mapped_column(String(20), default=Concurrency.SKIP_IF_OPEN)
    catch_up: Mapped[str] = mapped_column(String(20), default=CatchUp.SKIP_MISSED)
    catch_up_cap: Mapped[int] = mapped_column(default=10)
    next_slot_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """The first cron slot not yet decided; None: the scheduler sets it (from its clock) at its
    next pass, to the first slot after then. Every slot before it has been decided, once."""
    missed_slots: Mapped[int] = mapped_column(default=0)
    """Cron slots the catch-up policy did not run, in all."""
    webhook_nonce: Mapped[bytes | None] = mapped_column(LargeBinary(32))
    """The webhook secret is derived from it and an installation secret (never stored); None:
    no webhook. A rotation replaces it."""


class RoutineExecution(UUIDPrimaryKey, Timestamps, Base):
    """One slot of a routine, decided exactly once: the unique (routine, slot key) says so."""

    __tablename__ = "routine_executions"
    __table_args__ = (
        UniqueConstraint("routine_id", "slot_key"),
        Index("ix_routine_executions_routine_id_slot_at", "routine_id", "slot_at"),
        Index(
            "ix_routine_executions_queued",
            "routine_id",
            "created_at",
            postgresql_where=text("status = 'queued'"),
        ),
    )

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    routine_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("routines.id", ondelete="CASCADE"))
    slot_key: Mapped[str] = mapped_column(String(250))
    """``cron:<UTC instant>``, ``webhook:<idempotency key>`` or ``manual:<key>``."""
    slot_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    """The cron slot's due time; for a webhook or a call, when it was received."""
    trigger: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20))
    reason: Mapped[str | None] = mapped_column(String(64))
    """Why it was skipped or queued (``open_execution``, or the check that refused it)."""
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    """A webhook's JSON body; a call's ``payload``."""
    issue_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("issues.id", ondelete="SET NULL"), index=True
    )
    wake_request_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("wake_requests.id", ondelete="SET NULL")
    )
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
