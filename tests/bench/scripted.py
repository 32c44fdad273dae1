"""A scripted control plane for the benchmark peer: the control plane's side of the runner
protocol, over a real WebSocket on loopback, and nothing else.

Like the real one, it keeps one outbox per runner and, when a runner says
``hello``, forgets what is at or below its ``received_seq`` and sends the
rest; unlike it, it never applies an ack (the real one saves them every
0.5 s, so a reconnect within that time finds them unsaved: here, always).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import websockets
from websockets.asyncio.server import Server, ServerConnection, serve

from paperclip.wire import messages as wire


class ScriptedControlPlane:
    def __init__(self) -> None:
        self.seq = 0
        self.outbox: list[wire.DataMessage] = []
        self.hellos: list[wire.Hello] = []
        self.received: list[wire.Message] = []
        self.acked = 0
        self.runs: dict[uuid.UUID, list[uuid.UUID]] = {}
        self.resend_before_each = False
        """Send the last ``start_turn`` again before each new one (a resent message)."""
        self.link: ServerConnection | None = None
        self.linked = asyncio.Event()
        self.acks = asyncio.Condition()
        self.server: Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = next(iter(self.server.sockets)).getsockname()[:2]
        return f"http://{host}:{port}"

    async def __aenter__(self) -> ScriptedControlPlane:
        self.server = await serve(self.serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def serve(self, ws: ServerConnection) -> None:
        hello = wire.decode_from_runner(await ws.recv())
        assert isinstance(hello, wire.Hello)
        self.hellos.append(hello)
        self.outbox = [m for m in self.outbox if m.seq > hello.received_seq]
        await ws.send(wire.encode(wire.Welcome(replica="scripted", acked_seq=0)))
        for message in self.outbox:
            await ws.send(wire.encode(message))
        self.link = ws
        self.linked.set()
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in ws:
                message = wire.decode_from_runner(raw)
                self.received.append(message)
                if isinstance(message, wire.Ack):
                    async with self.acks:
                        self.acked = message.upto
                        self.acks.notify_all()
        self.linked.clear()

    async def acknowledged(self, upto: int) -> None:
        """Until the runner has acknowledged everything up to ``upto``."""
        async with self.acks:
            await self.acks.wait_for(lambda: self.acked >= upto)

    async def wake(self, issue_id: uuid.UUID) -> None:
        """What a committed wake makes: a new run of the issue, its ``start_turn`` sent."""
        await self.linked.wait()
        assert self.link is not None
        if self.resend_before_each and self.outbox:
            await self.link.send(wire.encode(self.outbox[-1]))  # an older start_turn, again
        self.seq += 1
        start = wire.StartTurn(
            seq=self.seq,
            run_id=uuid.uuid4(),
            provider="codex",
            token=f"token-{self.seq}",
            issue_id=issue_id,
        )
        self.runs[issue_id] = [start.run_id]
        self.outbox.append(start)
        await self.link.send(wire.encode(start))

    def sent_by_runner(self, kind: type[wire.DataMessage]) -> list[int]:
        """The seqs of the runner's data messages of one kind, in the order they came."""
        return [m.seq for m in self.received if isinstance(m, kind)]
