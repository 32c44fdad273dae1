"""The engine's transport in memory, and a runner peer on it: the engine without sockets."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any, TypeVar

import msgspec

from paperclip.engine.links.transport import TransportClosed
from paperclip.wire import messages as wire

M = TypeVar("M", bound=wire.Message)


class MemoryTransport:
    """Frames fed with ``feed`` are received by the engine; frames it sends wait in ``outgoing``."""

    def __init__(self) -> None:
        self._incoming: asyncio.Queue[str | None] = asyncio.Queue()
        self.outgoing: asyncio.Queue[str] = asyncio.Queue()
        self.closed: tuple[int, str] | None = None
        self.is_closed = asyncio.Event()

    def feed(self, message: wire.Message) -> None:
        self._incoming.put_nowait(wire.encode(message))

    def hang_up(self) -> None:
        self._incoming.put_nowait(None)

    async def receive(self) -> str:
        frame = await self._incoming.get()
        if frame is None or self.closed is not None:
            raise TransportClosed("hung up")
        return frame

    async def send(self, frame: str) -> None:
        if self.closed is not None:
            raise TransportClosed("closed")
        self.outgoing.put_nowait(frame)

    async def close(self, code: int, reason: str) -> None:
        if self.closed is None:
            self.closed = (code, reason)
            self.is_closed.set()
            self._incoming.put_nowait(None)


class MemoryRunner:
    """A runner process as the engine sees it: hello, numbered messages, acks."""

    def __init__(self, instance: str | None = None) -> None:
        self.transport = MemoryTransport()
        self.instance = instance or f"memory-{uuid.uuid4().hex[:6]}"
        self._seq = itertools.count(1)
        self.received: list[wire.Message] = []

    def hello(self, providers: list[str], runs: list[wire.HostedRun] | None = None) -> None:
        self.transport.feed(
            wire.Hello(
                protocol=wire.PROTOCOL,
                runner_instance=self.instance,
                providers=providers,
                runs=runs or [],
            )
        )

    def send(self, message: wire.DataMessage) -> int:
        """Send a data message with the next seq; the seq."""
        seq = next(self._seq)
        self.transport.feed(msgspec.structs.replace(message, seq=seq))
        return seq

    async def expect(self, kind: type[M], within: float = 10, **fields: Any) -> M:
        """The next message of ``kind`` (with these field values) the engine sent; others are kept."""
        async with asyncio.timeout(within):
            while True:
                message = wire.decode_to_runner(await self.transport.outgoing.get())
                self.received.append(message)
                if isinstance(message, kind) and all(
                    getattr(message, k) == v for k, v in fields.items()
                ):
                    if isinstance(message, wire.DataMessage):
                        self.transport.feed(wire.Ack(upto=message.seq))
                    return message
