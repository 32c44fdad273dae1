from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, DateTime, ForeignKey, Index, String, func, text
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, UUIDPrimaryKey


class KeyRole(StrEnum):
    """What a key may do (docs/security.md). Each role may do what the ones below it may."""

    VIEWER = "viewer"
    """Read everything of its company."""
    MEMBER = "member"
    """And write issues and comments, and wake agents."""
    ADMIN = "admin"
    """And manage the company's agents, settings and keys."""
    INSTANCE_ADMIN = "instance_admin"
    """Every company, and creating and deleting companies; made only by the CLI."""


ROLE_RANK = {KeyRole.VIEWER: 0, KeyRole.MEMBER: 1, KeyRole.ADMIN: 2, KeyRole.INSTANCE_ADMIN: 3}


class ApiKey(UUIDPrimaryKey, Base):
    """An API key for the authenticated mode; only its sha256 is stored.

    A key belongs to one company, or (role ``instance_admin``, no company) to
    the whole instance. Names are unique among the live keys of their scope.
    """

    __tablename__ = "api_keys"
    __table_args__ = (
        CheckConstraint(
            "(company_id IS NULL) = (role = 'instance_admin')", name="scope_matches_role"
        ),
        CheckConstraint(
            "role IN ('viewer', 'member', 'admin', 'instance_admin')", name="known_role"
        ),
        Index(
            "uq_api_keys_company_live_name",
            "company_id",
            "name",
            unique=True,
            postgresql_where=text("company_id IS NOT NULL AND revoked_at IS NULL"),
        ),
        Index(
            "uq_api_keys_instance_live_name",
            "name",
            unique=True,
            postgresql_where=text("company_id IS NULL AND revoked_at IS NULL"),
        ),
    )

    name: Mapped[str] = mapped_column(String(200))
    company_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    role: Mapped[str] = mapped_column(String(20))
    prefix: Mapped[str] = mapped_column(String(16))
    """The first characters of the key, shown in listings to tell keys apart."""
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
