"""The engine's transport in memory: a runner peer without a socket."""

from __future__ import annotations

import asyncio

from paperclip.engine.transport import TransportClosed
from paperclip.wire.messages import FromRunner, ToRunner, decode_to_runner, encode


class MemoryTransport:
    """Frames the engine sends are kept in ``sent``; frames fed with ``feed`` are received."""

    def __init__(self) -> None:
        self._incoming: asyncio.Queue[str | None] = asyncio.Queue()
        self.sent: list[str] = []
        self.closed: tuple[int, str] | None = None

    def feed(self, message: FromRunner) -> None:
        self._incoming.put_nowait(encode(message))

    def hang_up(self) -> None:
        self._incoming.put_nowait(None)

    def received(self) -> list[ToRunner]:
        """What the engine sent, decoded."""
        return [decode_to_runner(frame) for frame in self.sent]

    async def receive(self) -> str:
        frame = await self._incoming.get()
        if frame is None or self.closed is not None:
            raise TransportClosed("hung up")
        return frame

    async def send(self, frame: str) -> None:
        if self.closed is not None:
            raise TransportClosed("closed")
        self.sent.append(frame)

    async def close(self, code: int, reason: str) -> None:
        if self.closed is None:
            self.closed = (code, reason)
            self._incoming.put_nowait(None)
