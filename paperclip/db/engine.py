"""Engine and session factory for one PostgreSQL URL."""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from paperclip.db.availability import quiet_pool_close_failures


def async_url(url: str) -> str:
    """Normalise any PostgreSQL URL to the asyncpg driver."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(f"Paperclip needs PostgreSQL, not {parsed.get_backend_name()!r}")
    return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    # No pre-ping: it costs three round trips per checkout on the hot path, and
    # asyncpg reports a dead connection on first use, which invalidates it.
    engine = create_async_engine(
        async_url(url), pool_size=pool_size, max_overflow=pool_size, pool_recycle=1800
    )
    quiet_pool_close_failures(engine.sync_engine.pool)
    return engine


def create_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
