"""The asyncpg connection under a SQLAlchemy session, for the run engine's hottest statements.

The tool journal and the runner outbox are written for every tool call. Their
statements are plain SQL over arrays (one statement for a whole batch of
calls) sent straight to asyncpg, which prepares and caches them: SQLAlchemy's
compile and result layers would cost more than the database does. Everything
else goes through SQLAlchemy.
"""

from __future__ import annotations

import json
from typing import Any, cast

import asyncpg
from sqlalchemy.ext.asyncio import AsyncSession


async def driver_connection(session: AsyncSession) -> asyncpg.Connection:
    """The asyncpg connection of the session's connection.

    Its statements join the session's transaction once SQLAlchemy has begun
    it, that is after the session's first statement. Before that each one
    commits on its own, which is what a single-statement write wants.
    """
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    return cast(asyncpg.Connection, raw.driver_connection)


def jsonb(value: Any) -> str:
    """A JSONB parameter: the SQLAlchemy dialect's codec on these connections takes JSON text."""
    return json.dumps(value, separators=(",", ":"), default=str)
