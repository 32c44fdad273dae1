"""Direct database access for process tests (the processes under test own their own engines)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from paperclip.testing import connect


def query(url: str, sql: str, *args: Any) -> list[dict[str, Any]]:
    async def run() -> list[dict[str, Any]]:
        conn = await connect(url)
        try:
            return [dict(r) for r in await conn.fetch(sql, *args)]
        finally:
            await conn.close()

    return asyncio.run(run())


LEFT_GOING = (
    "UPDATE run_turns SET status = 'failed' WHERE status IN ('starting', 'running')",
    "UPDATE runs SET status = 'cancelled', phase = 'finished', finished_at = now() "
    "WHERE status IN ('queued', 'running')",
    "UPDATE wake_requests SET status = 'skipped' WHERE status = 'queued'",
)


def end_what_is_left(url: str) -> None:
    """End the runs, turns and wakes a test left going in its module's database (its
    processes stopped): a later test's runner would otherwise take them up, a lost run's
    next turn first, and answer it with that test's scripted model."""

    async def run() -> None:
        conn = await connect(url)
        try:
            async with conn.transaction():
                for statement in LEFT_GOING:
                    await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run())


async def insert_as_of(conn: Any, row: Any) -> None:
    """Insert a model's row into a schema of an earlier revision, with only the columns it has.

    The models have grown since: an INSERT of every column would name ones the
    old schema does not have. Python-side defaults are applied as the ORM would.
    """
    table = type(row).__table__
    present = {
        r["column_name"]
        for r in await conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = $1", table.name
        )
    }
    values = {}
    for column in table.columns:
        value = getattr(row, column.key, None)
        default = column.default
        if value is None and default is not None and default.is_scalar:
            value = default.arg
        elif value is None and default is not None and default.is_callable:
            value = default.arg(None)
        if column.name in present and value is not None:
            values[column.name] = json.dumps(value) if isinstance(value, dict | list) else value
    names = ", ".join(values)
    marks = ", ".join(f"${n}" for n in range(1, len(values) + 1))
    await conn.execute(f"INSERT INTO {table.name} ({names}) VALUES ({marks})", *values.values())


class HeldLock:
    """A transaction holding a table lock from another thread, until ``release()``.

    Freezes a real transaction of the process under test at the point where it
    needs the table, without any switch in the product's code.
    """

    def __init__(self, url: str, statement: str) -> None:
        self.url, self.statement = url, statement
        self._held = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._release: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._hold()), daemon=True)

    async def _hold(self) -> None:
        self._loop, self._release = asyncio.get_running_loop(), asyncio.Event()
        conn = await connect(self.url)
        try:
            async with conn.transaction():
                await conn.execute(self.statement)
                self._held.set()
                await self._release.wait()
        finally:
            await conn.close()

    def __enter__(self) -> HeldLock:
        self._thread.start()
        if not self._held.wait(30):
            raise TimeoutError("could not take the lock")
        return self

    def release(self) -> None:
        if self._loop is not None and self._release is not None:
            self._loop.call_soon_threadsafe(self._release.set)
        self._thread.join(30)

    def __exit__(self, *exc: object) -> None:
        self.release()
