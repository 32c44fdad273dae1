from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Index, String, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class AgentStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    """Not woken: wake requests for a paused agent are recorded but not run."""


class Agent(UUIDPrimaryKey, Timestamps, Base):
    """A configured worker of a company, driven through one provider."""

    __tablename__ = "agents"
    __table_args__ = (
        UniqueConstraint("company_id", "name"),
        Index(
            "ix_agents_heartbeat_due",
            "heartbeat_due_at",
            postgresql_where=text("heartbeat_seconds IS NOT NULL"),
        ),
    )

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(200), default="")
    provider: Mapped[str] = mapped_column(String(100))
    provider_config: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(20), default=AgentStatus.ACTIVE)
    reports_to: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), index=True
    )
    """Its manager in its company (None: the top). No loop: the database refuses one
    (migration 0021), as it refuses a manager of another company."""
    default_project_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("projects.id", ondelete="SET NULL")
    )
    """The project of an issue created for (or assigned to) this agent without one."""
    heartbeat_seconds: Mapped[int | None]
    """Wake it every this many seconds while it is idle and not paused (None: never)."""
    heartbeat_due_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    """Its next heartbeat; None: the scheduler sets it (from its clock) one interval ahead."""
