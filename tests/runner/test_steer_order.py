"""The runner sends a steer's result before any event the provider emitted meanwhile.

A real runner (``RunnerProcess``) on a real WebSocket, with a provider whose
driver records the steered input (a ``userMessage`` item, as Codex does) the
moment it accepts the steer, before it answers. The control plane's side is a
plain socket server that reads the frames in the order the runner sent them.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import websockets
from paperclip_hookspecs.providers import (
    DriverContext,
    EventSink,
    ProviderCapabilities,
    ProviderEvent,
    ProviderKind,
    TurnInput,
    TurnResult,
)

from paperclip.runner.runtime import RunnerProcess
from paperclip.wire import messages as wire

PROVIDER = "steering"


class ReadsAtOnceDriver:
    """Emits the steered input as a userMessage item before ``steer`` returns."""

    def __init__(self, context: DriverContext) -> None:
        self.emit: EventSink | None = None
        self.done = asyncio.Event()

    async def run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        self.emit = emit
        await emit(ProviderEvent("turn/started", {}))
        await self.done.wait()
        return TurnResult(status="completed")

    async def steer(self, message_id: str, text: str) -> bool:
        assert self.emit is not None
        item = {"type": "userMessage", "id": "u-1", "content": [{"type": "text", "text": text}]}
        await self.emit(ProviderEvent("item/completed", {"item": item}))
        await asyncio.sleep(0.05)  # the provider answers the steer request a moment later
        return True

    async def interrupt(self) -> None:
        self.done.set()

    async def close(self) -> None:
        self.done.set()


KIND = ProviderKind(
    name=PROVIDER,
    capabilities=ProviderCapabilities(steer=True),
    create_driver=ReadsAtOnceDriver,
    launch={"default": ("true",)},
)


async def test_the_steer_result_precedes_the_events_it_may_have_caused(tmp_path):
    run_id = uuid.uuid4()
    frames: list[wire.Message] = []
    seen = asyncio.Event()

    async def control_plane(ws) -> None:
        hello = wire.decode_from_runner(await ws.recv())
        assert isinstance(hello, wire.Hello)
        await ws.send(wire.encode(wire.Welcome(replica="test")))
        start = wire.StartTurn(seq=1, run_id=run_id, provider=PROVIDER, token="t", prompt="go")
        await ws.send(wire.encode(start))
        steered = False
        async for raw in ws:
            message = wire.decode_from_runner(raw)
            if isinstance(message, wire.Ack):
                continue
            frames.append(message)
            if isinstance(message, wire.Event) and message.event_type == "turn/started":
                if not steered:
                    steered = True
                    for seq, turn in ((2, 1), (3, 7)):  # the live turn, then another one
                        steer = wire.Steer(
                            seq=seq,
                            run_id=run_id,
                            message_id=f"m-{turn}",
                            text="Also this.",
                            turn=turn,
                        )
                        await ws.send(wire.encode(steer))
            if sum(isinstance(f, wire.SteerResult) for f in frames) == 2:
                seen.set()

    async with websockets.serve(control_plane, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        runner = RunnerProcess(
            [f"http://127.0.0.1:{port}"],
            "credential",
            work_dir=tmp_path,
            providers={PROVIDER: KIND},
        )
        task = asyncio.create_task(runner.run())
        try:
            await asyncio.wait_for(seen.wait(), 20)
        finally:
            await runner.stop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    order = [
        f.event_type if isinstance(f, wire.Event) else f"{type(f).__name__}:{f.message_id}"
        for f in frames
        if isinstance(f, wire.Event | wire.SteerResult)
    ]
    # The acknowledgement first, then the item that reads it.
    assert order == [
        "turn/started",
        "SteerResult:m-1",
        "item/completed",
        "SteerResult:m-7",
    ], order
    results = {f.message_id: f.acknowledged for f in frames if isinstance(f, wire.SteerResult)}
    assert results == {"m-1": True, "m-7": False}  # a steer for another turn is refused
