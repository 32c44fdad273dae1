from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class WakeStatus(StrEnum):
    QUEUED = "queued"
    CLAIMED = "claimed"
    """A replica took it and created (or joined) a run."""
    SKIPPED = "skipped"
    """Not run, with a reason (agent paused, issue closed, ...)."""


class WakeRequest(UUIDPrimaryKey, Timestamps, Base):
    """A request to run an agent now. Coalesced while queued; deduplicated by idempotency key."""

    __tablename__ = "wake_requests"
    __table_args__ = (
        Index(
            "uq_wake_requests_idempotency",
            "company_id",
            "agent_id",
            "idempotency_key",
            unique=True,
            postgresql_where=text("idempotency_key IS NOT NULL"),
        ),
        # At most one queued wake per agent and issue: later ones coalesce into it.
        Index(
            "uq_wake_requests_queued",
            "agent_id",
            "issue_id",
            unique=True,
            postgresql_where=text("status = 'queued' AND issue_id IS NOT NULL"),
        ),
        # At most one queued heartbeat per agent: a later one coalesces into it.
        Index(
            "uq_wake_requests_heartbeat",
            "agent_id",
            unique=True,
            postgresql_where=text("status = 'queued' AND source = 'heartbeat'"),
        ),
        Index("ix_wake_requests_queue", "status", "created_at"),
    )

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    issue_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("issues.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(String(40))
    """What woke the agent: ``comment``, ``assignment``, ``manual``, ``routine``, ``heartbeat``,
    ``chat``."""
    reason: Mapped[str] = mapped_column(String(500), default="")
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    coalesced_count: Mapped[int] = mapped_column(default=0)
    """How many later wakes were folded into this one while it was queued."""
    status: Mapped[str] = mapped_column(String(20), default=WakeStatus.QUEUED)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    run_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))


class WakeKey(Base):
    """An idempotency key already used for an agent, and the wake it resolved to.

    The primary key makes a repeated key a no-op even when two requests race,
    and even when the wake it created was coalesced into an earlier one.
    """

    __tablename__ = "wake_keys"

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), primary_key=True
    )
    agent_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    wake_request_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("wake_requests.id", ondelete="CASCADE", deferrable=True, initially="DEFERRED")
    )
    request_hash: Mapped[str | None] = mapped_column(String(64))
    """sha256 of the request that first used the key; a reuse with another request is refused.
    Null for keys recorded before it was kept (any reuse of those is a replay)."""
