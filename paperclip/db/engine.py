"""Engine and session factory for one PostgreSQL URL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
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


JOURNAL_POOL_SIZE = 5
"""The tool journal's connections (one statement at a time per runner connected here), which
a wake claim pass uses too (one pass at a time)."""


def create_engine(url: str, *, pool_size: int = 10, generic_plans: bool = False) -> AsyncEngine:
    """An engine whose pool holds ``pool_size`` connections, and as many more under load.

    ``generic_plans``: each prepared statement is planned once, not at every
    execution. For the tool journal's statements (``paperclip.engine.logs.journal``)
    and a claim pass's (``paperclip.engine.scheduling.claims``, ``new_runs``):
    PostgreSQL's default plans a statement anew at each execution when the plan
    for its actual parameters looks cheaper than one for any; over arrays it
    sees their lengths only then, and on a running server's tables it planned
    the journal's statement every time, which took about as long as executing
    it. Those statements reach every table through an index whatever the
    sizes, so one plan serves them. Not for the main pool: its queries compare
    status columns with parameters, and a plan made without their values
    cannot use the partial indexes built for them.
    """
    # No pre-ping: it costs three round trips per checkout on the hot path, and
    # asyncpg reports a dead connection on first use, which invalidates it.
    engine = create_async_engine(
        async_url(url), pool_size=pool_size, max_overflow=pool_size, pool_recycle=1800
    )
    if generic_plans:
        # A SET once per connection, not a startup parameter: PgBouncer refuses
        # startup parameters it does not know.
        event.listen(engine.sync_engine, "connect", _plan_once)
    quiet_pool_close_failures(engine.sync_engine.pool)
    return engine


def _plan_once(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.run_async(
        lambda connection: connection.execute("SET plan_cache_mode = force_generic_plan")
    )


def create_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
