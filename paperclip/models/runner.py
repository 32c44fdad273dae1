from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, ForeignKey, String, func
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class Runner(UUIDPrimaryKey, Timestamps, Base):
    """A runner process host, known by its credential (stored as sha256)."""

    __tablename__ = "runners"

    name: Mapped[str] = mapped_column(String(200), unique=True)
    credential_hash: Mapped[str] = mapped_column(String(64), unique=True)
    out_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    """The last sequence number given to a control-plane message for this runner."""
    acked_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    """The runner acknowledged every control-plane message up to here (cumulative)."""
    in_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    """The last message of ``instance`` processed durably (what a reconnect resumes after)."""
    instance: Mapped[str | None] = mapped_column(String(200))
    """The runner process currently connected (a new one per process start)."""
    replica: Mapped[str | None] = mapped_column(String(200))
    """The control-plane replica it is connected to."""
    last_seen_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    workspace_roots: Mapped[list[Any] | None] = mapped_column()
    """The folders its host lets repositories come from, as it last said (None: never said)."""
    workspace_remotes: Mapped[list[Any] | None] = mapped_column()
    """The clone URL patterns its host allows, as it last said."""
    workspace_bytes: Mapped[int | None] = mapped_column(BigInteger)
    """Disk its worktrees and mirrors use, as it last reported."""
    workspace_count: Mapped[int | None] = mapped_column()
    status_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    offers: Mapped[dict[str, Any] | None] = mapped_column()
    """What its process said it offers: ``providers``, ``launch_profiles`` (names by
    provider) and, once probed, ``probes`` (each profile's CLI found, its version, a hint)."""


class RunnerMessage(Base):
    """The control plane's outbox to a runner: kept until the runner acknowledges it."""

    __tablename__ = "runner_outbox"

    runner_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("runners.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    type: Mapped[str] = mapped_column(String(40))
    run_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class RunToken(Base):
    """A bearer token that acts as one run, its agent and company; dies with the run."""

    __tablename__ = "run_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
