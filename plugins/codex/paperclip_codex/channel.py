"""The bounded queue between the provider's reader and a turn's event pump."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


class Stop:
    """Put after the last message a turn should emit, to end that turn's pump early."""


@dataclass(slots=True)
class Ended:
    reason: str


class EventChannel:
    """Bounded FIFO of provider messages, with an end marker that never blocks."""

    def __init__(self, maxsize: int) -> None:
        self._queue: asyncio.Queue[object] = asyncio.Queue(maxsize)
        self._ended: str | None = None
        self._end = asyncio.Event()

    async def put(self, item: object) -> None:
        await self._queue.put(item)

    def end(self, reason: str) -> None:
        if self._ended is None:
            self._ended = reason
            self._end.set()

    async def get(self) -> object:
        while True:
            if not self._queue.empty():
                return self._queue.get_nowait()
            if self._ended is not None:
                return Ended(self._ended)
            getter = asyncio.ensure_future(self._queue.get())
            ender = asyncio.ensure_future(self._end.wait())
            try:
                await asyncio.wait({getter, ender}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ender.cancel()
                if not getter.done():
                    getter.cancel()
            if getter.done() and not getter.cancelled():
                return getter.result()
