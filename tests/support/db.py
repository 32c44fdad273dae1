"""Direct database access for process tests (the processes under test own their own engines)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from sqlalchemy.engine import make_url


async def _connect(url: str) -> Any:
    import asyncpg

    parsed = make_url(url)
    return await asyncpg.connect(
        user=parsed.username,
        password=parsed.password or None,
        database=parsed.database,
        host=parsed.query.get("host", parsed.host),
        port=parsed.port,
    )


def query(url: str, sql: str, *args: Any) -> list[dict[str, Any]]:
    async def run() -> list[dict[str, Any]]:
        conn = await _connect(url)
        try:
            return [dict(r) for r in await conn.fetch(sql, *args)]
        finally:
            await conn.close()

    return asyncio.run(run())


class HeldLock:
    """A transaction holding a table lock from another thread, until ``release()``.

    Freezes a real transaction of the process under test at the point where it
    needs the table, without any switch in the product's code.
    """

    def __init__(self, url: str, statement: str) -> None:
        self.url, self.statement = url, statement
        self._held, self._release = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._hold()), daemon=True)

    async def _hold(self) -> None:
        conn = await _connect(self.url)
        try:
            async with conn.transaction():
                await conn.execute(self.statement)
                self._held.set()
                while not self._release.is_set():
                    await asyncio.sleep(0.05)
        finally:
            await conn.close()

    def __enter__(self) -> HeldLock:
        self._thread.start()
        if not self._held.wait(30):
            raise TimeoutError("could not take the lock")
        return self

    def release(self) -> None:
        self._release.set()
        self._thread.join(30)

    def __exit__(self, *exc: object) -> None:
        self.release()
