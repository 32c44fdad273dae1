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
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base


class ToolCallStatus(StrEnum):
    PENDING = "pending"
    """Admitted and journaled; no result saved yet."""
    SETTLED = "settled"
    """A result is saved; it is what the model gets, however often it asks."""


class ToolCall(Base):
    """The tool journal: one semantic input of a run, journaled before dispatch.

    ``admitted_by``/``admitted_epoch`` name the controller that admitted it; the
    result is saved before it is returned. Together with receipts this answers,
    after any restart: what was pending, who admitted it, and what happened.
    """

    __tablename__ = "tool_calls"
    __table_args__ = (
        UniqueConstraint("run_id", "call_id"),
        # Recovery reads only what is pending, whatever the journal's size.
        Index("ix_tool_calls_pending", "run_id", postgresql_where=text("status = 'pending'")),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    call_id: Mapped[str] = mapped_column(String(100))
    """The runner's id for this call; a replayed call carries the same one."""
    tool: Mapped[str] = mapped_column(String(100))
    arguments: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(20), default=ToolCallStatus.PENDING)
    admitted_by: Mapped[str] = mapped_column(String(200))
    admitted_epoch: Mapped[int]
    result: Mapped[dict[str, Any] | None] = mapped_column()
    is_error: Mapped[bool] = mapped_column(default=False)
    state_revision: Mapped[str | None] = mapped_column(String(64))
    """Set when the call applied a write under its own command id: the row is then its
    receipt (``tool_receipts`` keeps only the commands the model named)."""
    settled_by: Mapped[str | None] = mapped_column(String(200))
    settled_epoch: Mapped[int | None]
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    settled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ToolReceipt(Base):
    """Durable proof that a write tool's effect happened, keyed by a command id the model named.

    Written in the same transaction as the effect: a later call with the same
    command id finds it and gets the saved result back as ``duplicate``
    instead of writing again. A call under its own command id (none named)
    keeps its receipt on its journal row (``ToolCall.state_revision``).
    """

    __tablename__ = "tool_receipts"

    command_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    tool: Mapped[str] = mapped_column(String(100))
    state_revision: Mapped[str] = mapped_column(String(64))
    """A revision of the state the effect produced (e.g. the comment's body revision)."""
    result: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
