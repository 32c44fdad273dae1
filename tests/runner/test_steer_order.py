"""The runner sends a steer's result before any event the provider emitted meanwhile, and
a turn's end after them.

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


class EndsWhileSteeredDriver(ReadsAtOnceDriver):
    """Reads a steer (a userMessage item) and ends its turn before it answers a later steer,
    as a model that reads pending input at its last step does while the next steer arrives."""

    async def steer(self, message_id: str, text: str) -> bool:
        assert self.emit is not None
        item = {"type": "userMessage", "id": "u-1", "content": [{"type": "text", "text": text}]}
        await self.emit(ProviderEvent("item/completed", {"item": item}))
        self.done.set()  # the turn ends while this steer is being answered
        await asyncio.sleep(0.05)
        return False  # no turn to steer any more


KIND = ProviderKind(
    name=PROVIDER,
    capabilities=ProviderCapabilities(steer=True),
    create_driver=ReadsAtOnceDriver,
    launch={"default": ("true",)},
)


async def _frames(tmp_path, kind: ProviderKind, steers: list[int], until) -> list[wire.Message]:
    """What a real runner hosting ``kind`` sends for one run, steered once per turn number
    in ``steers`` after its turn started, until ``until(frames)``."""
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
                    for seq, turn in enumerate(steers, start=2):
                        steer = wire.Steer(
                            seq=seq,
                            run_id=run_id,
                            message_id=f"m-{turn}",
                            text="Also this.",
                            turn=turn,
                        )
                        await ws.send(wire.encode(steer))
            if until(frames):
                seen.set()

    async with websockets.serve(control_plane, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        runner = RunnerProcess(
            [f"http://127.0.0.1:{port}"],
            "credential",
            work_dir=tmp_path,
            providers={PROVIDER: kind},
        )
        task = asyncio.create_task(runner.run())
        try:
            await asyncio.wait_for(seen.wait(), 20)
        finally:
            await runner.stop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    return frames


def _order(frames: list[wire.Message]) -> list[str]:
    return [
        f.event_type
        if isinstance(f, wire.Event)
        else f"{type(f).__name__}:{f.message_id}"
        if isinstance(f, wire.SteerResult)
        else type(f).__name__
        for f in frames
        if isinstance(f, wire.Event | wire.SteerResult | wire.TurnFinished)
    ]


async def test_the_steer_result_precedes_the_events_it_may_have_caused(tmp_path):
    frames = await _frames(
        tmp_path,
        KIND,
        [1, 7],  # the live turn, then another one
        lambda frames: sum(isinstance(f, wire.SteerResult) for f in frames) == 2,
    )
    # The acknowledgement first, then the item that reads it.
    assert _order(frames) == [
        "turn/started",
        "SteerResult:m-1",
        "item/completed",
        "SteerResult:m-7",
    ], _order(frames)
    results = {f.message_id: f.acknowledged for f in frames if isinstance(f, wire.SteerResult)}
    assert results == {"m-1": True, "m-7": False}  # a steer for another turn is refused


async def test_a_turn_that_ends_while_a_steer_is_answered_ends_after_the_events_held(tmp_path):
    """The chaos run of seed 4244: the turn's end overtook a held event (the model's reading
    of an earlier steer), the control plane closed the run's log, and the steer was lost."""
    kind = ProviderKind(
        name=PROVIDER,
        capabilities=ProviderCapabilities(steer=True),
        create_driver=EndsWhileSteeredDriver,
        launch={"default": ("true",)},
    )
    frames = await _frames(
        tmp_path,
        kind,
        [1],
        lambda frames: (
            any(isinstance(f, wire.TurnFinished) for f in frames)
            and any(isinstance(f, wire.SteerResult) for f in frames)
        ),
    )
    assert _order(frames) == [
        "turn/started",
        "SteerResult:m-1",
        "item/completed",
        "TurnFinished",
    ], _order(frames)
