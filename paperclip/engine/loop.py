"""The engine's background loops: a pass, then a wait, until the engine stops.

Every keeper (recovery, presentation, leases, boots, workspaces, budgets,
routines) runs the same way: a pass that fails (the database is away, say)
is logged in one line and the loop goes on; a cancel stops it at once.

Imports: none
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from paperclip.db.availability import log_failure


async def keep_running(
    one_pass: Callable[[], Awaitable[object]],
    *,
    every: float,
    until_next: Callable[[], Awaitable[float]] | None = None,
    log: logging.Logger,
    failure: str,
    failure_args: tuple[object, ...] = (),
    nudge: asyncio.Event | None = None,
    first_wait: bool = False,
    retry: float | None = None,
) -> None:
    """Run ``one_pass`` every ``every`` seconds until cancelled.

    ``until_next``, after a pass, says how long to wait instead (a scheduler that
    knows when its next slot is due). A pass that raises logs ``failure`` (with
    ``failure_args``) and waits ``retry`` (default: ``every``). ``nudge``, when
    set, ends a wait early (and is cleared); ``first_wait`` waits before the
    first pass.
    """
    if first_wait:
        await _wait(every, nudge)
    while True:
        try:
            await one_pass()
            wait = await until_next() if until_next is not None else every
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the next pass tries again
            log_failure(log, failure, exc, *failure_args)
            wait = every if retry is None else retry
        await _wait(wait, nudge)


async def _wait(seconds: float, nudge: asyncio.Event | None) -> None:
    if nudge is None:
        await asyncio.sleep(seconds)
        return
    # asyncio.timeout, not wait_for: on 3.11 a cancel racing wait_for's timeout can be lost.
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await nudge.wait()
    nudge.clear()
