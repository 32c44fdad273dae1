"""Hold a connection that LISTENs on a PostgreSQL channel, and say whether it does.

NOTIFY is delivered at the notifying transaction's commit, to every connection
listening then. What relies on notifications must know when it may not: while
the connection is down, or before its LISTEN took effect, nothing arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

RETRY_SECONDS = 2.0


async def hold_listener(
    engine: AsyncEngine,
    channel: str,
    on_notify: Callable[[str], None],
    on_listening: Callable[[bool], None],
    log: logging.Logger,
    *,
    retry_seconds: float = RETRY_SECONDS,
) -> None:
    """LISTEN on ``channel`` until cancelled, re-establishing the connection when it breaks.

    ``on_notify(payload)`` for each notification.
    ``on_listening(True)`` once the LISTEN is in place (anything committed
    before it was not notified), ``on_listening(False)`` when it is lost.
    """

    def notified(_connection: Any, _pid: int, _channel: str, payload: str) -> None:
        on_notify(payload)

    while True:
        try:
            async with engine.connect() as connection:
                raw = (await connection.get_raw_connection()).driver_connection
                lost = asyncio.Event()
                raw.add_termination_listener(lambda _conn, lost=lost: lost.set())
                await raw.add_listener(channel, notified)
                on_listening(True)
                try:
                    await lost.wait()
                finally:
                    on_listening(False)
                    with contextlib.suppress(Exception):
                        await raw.remove_listener(channel, notified)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("notifications on %s unavailable (%s); retrying", channel, exc)
        await asyncio.sleep(retry_seconds)
