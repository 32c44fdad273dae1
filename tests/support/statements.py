"""Every statement a block of code sends to PostgreSQL, counted at the engine.

SQLAlchemy's ``before_cursor_execute`` sees what goes through a session or a
connection; the statements sent straight to the asyncpg connection under it
(``paperclip.db.driver``: the outbox, the journal) are seen by asyncpg's query
logger, which also sees the transactions' ``BEGIN`` and ``COMMIT``. A
statement SQLAlchemy sends as ``executemany`` reaches both: it counts once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

CONTROL = ("BEGIN", "COMMIT", "ROLLBACK")
INTROSPECTION = ("typeinfo_tree", "set_config('jit'")
"""asyncpg's own queries: a type's description, read once per connection the first time a
statement uses the type (arrays of records, ``jsonb[]``). Counted apart: no claim repeats them."""


@dataclass
class StatementLog:
    """What was sent, in order (logged driver statements last, after the block)."""

    statements: list[str] = field(default_factory=list)
    """Every statement but transaction control (savepoints included)."""
    transactions: int = 0
    """Transactions begun (``BEGIN``)."""
    introspections: int = 0
    """asyncpg's type introspection queries (``INTROSPECTION``)."""
    _many: list[str] = field(default_factory=list)

    def matching(self, *words: str) -> list[str]:
        """The statements that contain every one of ``words``."""
        return [s for s in self.statements if all(w in s for w in words)]

    def brief(self) -> list[str]:
        """Each statement's beginning, on one line: for an assertion's message."""
        return [" ".join(s.split())[:60] for s in self.statements]

    def __len__(self) -> int:
        return len(self.statements)


@contextlib.asynccontextmanager
async def statements_of(*engines: AsyncEngine) -> AsyncIterator[StatementLog]:
    """Count what the code inside sends through ``engines``' pools."""
    log = StatementLog()
    drivers: list[Any] = []

    def on_cursor(_conn: Any, _cursor: Any, statement: str, _params: Any, _ctx: Any, many: bool):
        log.statements.append(statement)
        if many:
            log._many.append(statement)

    def on_query(record: Any) -> None:
        query = record.query.strip()
        if query.upper().startswith(CONTROL):
            log.transactions += query.upper().startswith("BEGIN")
        elif any(word in query for word in INTROSPECTION):
            log.introspections += 1
        elif query in log._many:
            log._many.remove(query)
        else:
            log.statements.append(query)

    def on_checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        driver = dbapi_connection.driver_connection
        driver.add_query_logger(on_query)
        drivers.append(driver)

    syncs = [e.sync_engine for e in engines]
    for sync in syncs:
        event.listen(sync, "before_cursor_execute", on_cursor)
        event.listen(sync.pool, "checkout", on_checkout)
    try:
        yield log
        await asyncio.sleep(0)  # the query logger's callbacks are scheduled, not called
        await asyncio.sleep(0)
    finally:
        for sync in syncs:
            event.remove(sync, "before_cursor_execute", on_cursor)
            event.remove(sync.pool, "checkout", on_checkout)
        for driver in drivers:
            driver.remove_query_logger(on_query)
