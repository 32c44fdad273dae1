from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import DateTime, ForeignKey, Index, String, Text, func, text
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base


class RecoveryItemStatus(StrEnum):
    PENDING = "pending"
    """Listed, not settled yet (kept, or its attempts failed)."""
    SETTLED = "settled"
    QUARANTINED = "quarantined"
    """Set aside after too many failed attempts; an operator looks at it."""


class RecoveryItem(Base):
    """The reconciler's memory of a candidate: attempts, failures, quarantine."""

    __tablename__ = "recovery_items"
    __table_args__ = (
        Index(
            "ix_recovery_items_quarantined",
            "kind",
            postgresql_where=text("status = 'quarantined'"),
        ),
    )

    kind: Mapped[str] = mapped_column(String(100), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    company_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE")
    )
    status: Mapped[str] = mapped_column(String(20), default=RecoveryItemStatus.PENDING)
    attempts: Mapped[int] = mapped_column(default=0)
    """Settlements that failed (raised)."""
    last_error: Mapped[str | None] = mapped_column(Text)
    last_outcome: Mapped[str | None] = mapped_column(String(40))
    first_seen_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class RecoverySettlement(Base):
    """A candidate settled: written in the settlement's own transaction, at most once."""

    __tablename__ = "recovery_settlements"

    kind: Mapped[str] = mapped_column(String(100), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    settled_by: Mapped[str] = mapped_column(String(200))
    outcome: Mapped[str] = mapped_column(String(40))
    settled_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class ControllerBoot(Base):
    """One start of a control-plane process: what proves a closing controller gone.

    A live process renews ``seen_at``; another proves it gone by retiring a
    boot not seen for a lease (an update only one side can win), after which
    the retired process can renew nothing.
    """

    __tablename__ = "controller_boots"

    boot_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    instance: Mapped[str] = mapped_column(String(200))
    started_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    seen_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    retired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
