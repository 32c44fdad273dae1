"""The asyncpg connection under SQLAlchemy, for the hottest statements.

The tool journal and the runner outbox are written for every tool call. Their
statements are plain SQL over arrays (one statement for a whole batch of
calls) sent straight to asyncpg, which prepares and caches them: SQLAlchemy's
compile and result layers would cost more than the database does. The API's
most frequent requests (a key's check, an issue and its comments) are one
statement each, on a pooled connection without a session. Everything else
goes through SQLAlchemy.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import asyncpg
import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.util import greenlet_spawn


async def driver_connection(session: AsyncSession) -> asyncpg.Connection:
    """The asyncpg connection of the session's connection.

    Its statements join the session's transaction once SQLAlchemy has begun
    it, that is after the session's first statement. Before that each one
    commits on its own, which is what a single-statement write wants.
    """
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    return cast(asyncpg.Connection, raw.driver_connection)


def engine_of(sessions: async_sessionmaker[AsyncSession]) -> AsyncEngine:
    """The engine a session factory is bound to."""
    return cast(AsyncEngine, sessions.kw["bind"])


@asynccontextmanager
async def plain_connection(engine: AsyncEngine) -> AsyncIterator[asyncpg.Connection]:
    """A pooled connection's asyncpg connection, for statements that each commit on their own
    (or in a ``transaction()`` block of asyncpg's, which ends before this one does).

    No session and no SQLAlchemy connection around it: for a one-statement
    read those cost about twice what the statement does. Begin no transaction
    on it that could outlive the block, and raise nothing of your own under
    it: only an error PostgreSQL answered a statement with leaves the
    connection to the pool. Any other (a cancellation, a lost or broken
    connection) discards it.
    """
    raw = await engine.raw_connection()
    connection = cast(asyncpg.Connection, raw.driver_connection)
    try:
        yield connection
    except BaseException as exc:
        if not _answered(exc):
            connection.terminate()  # its state on the wire is unknown: never hand it out again
        raise
    finally:
        if connection.is_closed():
            await greenlet_spawn(raw.invalidate)
        else:
            # Back to the pool: no I/O, unless the pool is full and closes it, which
            # the asyncpg adapter can only do inside greenlet_spawn.
            await greenlet_spawn(raw.close)


def _answered(exc: BaseException) -> bool:
    """Whether ``exc`` is PostgreSQL's answer to a statement, after which the connection is idle."""
    return isinstance(exc, asyncpg.PostgresError) and not isinstance(
        exc,
        (asyncpg.exceptions.PostgresConnectionError, asyncpg.exceptions.OperatorInterventionError),
    )


def jsonb(value: Any) -> str:
    """A JSONB parameter: the SQLAlchemy dialect's codec on these connections takes JSON text."""
    return json.dumps(value, separators=(",", ":"), default=str)


def jsonb_of_json(value: Any) -> str:
    """``jsonb`` of a value made of JSON's own types only (as a decoded frame is), about eight
    times faster. Not for other values: msgspec writes a datetime otherwise than ``str``."""
    return msgspec.json.encode(value).decode()
