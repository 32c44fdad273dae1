from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import (
    BigInteger,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    String,
    UniqueConstraint,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class CostSource(StrEnum):
    PROVIDER = "provider"
    """The provider said what the response cost."""
    PRICED = "priced"
    """Priced from the model price table."""
    UNKNOWN = "unknown"
    """Neither: the tokens are recorded, the cost is not known."""


class ModelPrice(Timestamps, Base):
    """What a model's tokens cost, per million, in micro-units of ``currency`` (instance-wide)."""

    __tablename__ = "model_prices"

    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    input_per_million_micros: Mapped[int] = mapped_column(BigInteger)
    cached_input_per_million_micros: Mapped[int] = mapped_column(BigInteger)
    output_per_million_micros: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(8), default="USD")


class CostEvent(Base):
    """One model response's usage, recorded once (``(run_id, key)``), and what it cost."""

    __tablename__ = "cost_events"
    __table_args__ = (
        UniqueConstraint("run_id", "key"),
        Index("ix_cost_events_company_occurred", "company_id", "occurred_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    agent_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="SET NULL"), index=True
    )
    issue_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("issues.id", ondelete="SET NULL"), index=True
    )
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    turn: Mapped[int] = mapped_column(default=0)
    key: Mapped[str] = mapped_column(String(200))
    """The provider's id of the response: the same key again is the same usage."""
    provider: Mapped[str] = mapped_column(String(100))
    model: Mapped[str] = mapped_column(String(200), default="")
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cached_input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    reasoning_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cost_micros: Mapped[int | None] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(8), default="USD")
    cost_source: Mapped[str] = mapped_column(String(20))
    occurred_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class BudgetScope(StrEnum):
    COMPANY = "company"
    AGENT = "agent"
    PROJECT = "project"


class Budget(UUIDPrimaryKey, Timestamps, Base):
    """A monthly cap on what a company, one of its agents or projects spends.

    Past it no new run starts (its wakes wait, held ``budget_exceeded``), a turn
    does not start, and a live turn stops at its next tool call. Raising it, or a
    new month (in the company's time zone), releases what it held.
    """

    __tablename__ = "budgets"
    __table_args__ = (UniqueConstraint("scope", "scope_id"),)

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    scope: Mapped[str] = mapped_column(String(20))
    scope_id: Mapped[uuid.UUID]
    """The company's, agent's or project's id."""
    monthly_limit_micros: Mapped[int] = mapped_column(BigInteger)
    warn_percent: Mapped[int] = mapped_column(default=80)
    run_reserve_micros: Mapped[int] = mapped_column(BigInteger, default=0)
    """Held against the limit when a run starts, until the run's own costs replace it (or it
    ends): runs starting together never overspend more than this each."""
    currency: Mapped[str] = mapped_column(String(8), default="USD")


class BudgetMonth(Base):
    """A budget's month: what was spent, what running runs hold, whether it warned or ran out."""

    __tablename__ = "budget_months"

    budget_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("budgets.id", ondelete="CASCADE"), primary_key=True
    )
    month: Mapped[str] = mapped_column(String(7), primary_key=True)
    """``YYYY-MM`` in the company's time zone."""
    spent_micros: Mapped[int] = mapped_column(BigInteger, default=0)
    reserved_micros: Mapped[int] = mapped_column(BigInteger, default=0)
    warned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    exceeded_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class RunReservation(Base):
    """What a run holds of a budget's month until its own costs replace it, or it ends."""

    __tablename__ = "run_reservations"

    run_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    budget_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("budgets.id", ondelete="CASCADE"), primary_key=True
    )
    month: Mapped[str] = mapped_column(String(7))
    micros: Mapped[int] = mapped_column(BigInteger)
