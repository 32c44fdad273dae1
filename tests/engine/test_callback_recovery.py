"""Seed 003's safety cases, on the real engine and a real PostgreSQL (the runner in memory).

A plugin tool whose handler the test holds open plays the callback. The fence
moves under it the real way: this replica's lease lapses and it takes the run
over again through the recovery port (a new epoch), so the input becomes an
earlier controller's while this process still runs it.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.plugin_tools import PluginTool, ToolAnswer, ToolCall, ToolOutcomeUnknown
from paperclip_hookspecs.receipts import ReceiptStatus, ToolReceipt
from sqlalchemy import select, text

from paperclip.engine.calls.callbacks import CAPACITY
from paperclip.models import ToolCall as ToolCallRow
from paperclip.wire import messages as wire
from tests.engine.memory_world import eventually, make_world, started

pytestmark = pytest.mark.installed_plugins

OPEN = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False}


@dataclass
class HeldTool:
    """A plugin tool with an external effect the test controls: it counts its runs."""

    runs: int = 0
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    answer: dict[str, Any] = field(default_factory=lambda: {"done": True})
    receipt: ToolReceipt | None = None
    unknown: bool = False
    lookups: list[str] = field(default_factory=list)

    async def call(self, call: ToolCall) -> ToolAnswer:
        self.runs += 1
        self.entered.set()
        await self.release.wait()
        return ToolAnswer(self.answer)

    async def find_receipt(self, command_id: str) -> ToolReceipt | None:
        self.lookups.append(command_id)
        if self.unknown:
            raise ToolOutcomeUnknown("the ledger is down")
        return self.receipt

    @hookimpl
    def paperclip_tools(self) -> list[PluginTool]:
        return [PluginTool(name="held_effect", description="test", input_schema=OPEN, handler=self)]


@pytest.fixture
async def scene(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    tool = HeldTool()
    paperclip_register_plugin(tool, name="held-tool")
    from paperclip_orphaned_callbacks import plugin as orphaned_callbacks

    paperclip_register_plugin(orphaned_callbacks, name="orphaned-callbacks")
    world, engine = await make_world(
        paperclip_container,
        paperclip_plugin_host,
        paperclip_register_plugin,
        reconcile_seconds=3600,  # passes run when the test says
    )
    await engine.start()
    try:
        peer, _ = await world.connect(await world.new_runner())
        await world.assign()
        start = await started(peer)
        yield world, engine, peer, start, tool
    finally:
        tool.release.set()
        await engine.stop()


def send_call(peer, start) -> str:
    call_id = uuid.uuid4().hex
    peer.send(
        wire.ToolCall(
            seq=0,
            run_id=start.run_id,
            call_id=call_id,
            tool="held_effect",
            arguments={"n": 1},
            token=start.token,
        )
    )
    return call_id


async def row_of(world, run_id, call_id) -> ToolCallRow | None:
    async with world.container.sessions()() as session:
        return (
            await session.execute(
                select(ToolCallRow)
                .where(ToolCallRow.run_id == run_id, ToolCallRow.call_id == call_id)
                .execution_options(populate_existing=True)
            )
        ).scalar_one_or_none()


async def move_fence(world, engine, run_id) -> int:
    """This replica's lease lapses and it takes the run over again: the epoch moves.

    Its lease keeper may renew the lease between the two steps on a busy
    machine: then the lapse is made again.
    """
    for _ in range(20):
        async with world.container.sessions().begin() as session:
            await session.execute(
                text(
                    "UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = :id"
                ),
                {"id": run_id},
            )
        proof = await engine.port.take_over_run(str(run_id))
        if proof.gone:
            return proof.epoch
    raise AssertionError(f"the fence did not move: {proof}")


async def test_a_callback_this_process_runs_stays_pending_then_settles_on_the_next_pass(scene):
    world, engine, peer, start, tool = scene
    call_id = send_call(peer, start)
    await asyncio.wait_for(tool.entered.wait(), 10)
    await move_fence(world, engine, start.run_id)

    await engine.reconciler.pass_once()  # it still runs here: kept
    row = await row_of(world, start.run_id, call_id)
    assert row.status == "pending"
    assert engine.reconciler.reports["orphaned_tool_callbacks"].kept == 1

    tool.release.set()  # it finishes, but its dispatch's epoch is gone: no result saved
    await eventually(lambda: asyncio.sleep(0, engine.calls.memory.running(row.id)), lambda r: not r)
    assert (await row_of(world, start.run_id, call_id)).status == "pending"

    await engine.reconciler.pass_once()
    row = await row_of(world, start.run_id, call_id)
    assert row.status == "settled" and row.is_error
    assert row.result["error"]["code"] == "tool_call_interrupted_by_restart"
    assert row.result["error"]["outcome"] == "unknown"
    assert row.result["error"]["retryable"] is False
    late = await peer.expect(wire.ToolResult, call_id=call_id)  # the runner gets it late
    assert late.is_error
    assert tool.runs == 1  # never dispatched again


async def test_a_callback_this_controller_saw_rejected_stays_pending(scene):
    world, engine, peer, start, tool = scene
    tool.answer = {"text": "a NUL \u0000 PostgreSQL refuses to store"}
    tool.release.set()
    call_id = send_call(peer, start)
    await eventually(
        lambda: row_of(world, start.run_id, call_id),
        lambda r: r is not None and engine.calls.memory.failed_here(r.id),
    )
    for _ in range(2):  # live, then after the fence moved under it
        await engine.reconciler.pass_once()
        await engine.call_recovery.recover_pending(start.run_id, runner_id=peer_runner(engine))
        assert (await row_of(world, start.run_id, call_id)).status == "pending"
        await move_fence(world, engine, start.run_id)
    assert tool.runs == 1  # asked about, never run again


async def test_a_forgotten_rejected_callback_settles_as_interrupted_never_replayed(scene):
    world, engine, peer, start, tool = scene
    tool.answer = {"text": "a NUL \u0000 PostgreSQL refuses to store"}
    tool.release.set()
    call_id = send_call(peer, start)
    row = await eventually(
        lambda: row_of(world, start.run_id, call_id),
        lambda r: r is not None and engine.calls.memory.failed_here(r.id),
    )
    memory = engine.calls.memory
    for other in range(10**9, 10**9 + CAPACITY):  # later failures push it out of the bound
        memory.failed(other)
    assert len(memory) == CAPACITY and not memory.failed_here(row.id)
    await move_fence(world, engine, start.run_id)
    await engine.reconciler.pass_once()
    row = await row_of(world, start.run_id, call_id)
    assert row.status == "settled"
    assert row.result["error"]["code"] == "tool_call_interrupted_by_restart"
    assert tool.runs == 1


async def test_a_durable_receipt_is_replayed_not_replaced(scene):
    world, engine, peer, start, tool = scene
    call_id = send_call(peer, start)
    await asyncio.wait_for(tool.entered.wait(), 10)
    await move_fence(world, engine, start.run_id)
    tool.release.set()
    row = await row_of(world, start.run_id, call_id)
    await eventually(lambda: asyncio.sleep(0, engine.calls.memory.running(row.id)), lambda r: not r)
    tool.receipt = ToolReceipt(
        command_id=f"{start.run_id}:{call_id}",
        status=ReceiptStatus.APPLIED,
        result={"done": True, "ticket": "T-9"},
        state_revision="rev-1",
    )
    await engine.reconciler.pass_once()
    row = await row_of(world, start.run_id, call_id)
    assert row.status == "settled" and not row.is_error
    assert row.result["ticket"] == "T-9"
    assert row.result["receipt"]["command_id"] == f"{start.run_id}:{call_id}"
    assert row.result["receipt"]["state_revision"] == "rev-1"
    assert tool.lookups == [f"{start.run_id}:{call_id}"] and tool.runs == 1


async def test_an_unknown_outcome_settles_as_interrupted_under_the_owner_gone_proof(scene):
    world, engine, peer, start, tool = scene
    tool.unknown = True
    call_id = send_call(peer, start)
    await asyncio.wait_for(tool.entered.wait(), 10)
    await move_fence(world, engine, start.run_id)
    tool.release.set()
    row = await row_of(world, start.run_id, call_id)
    await eventually(lambda: asyncio.sleep(0, engine.calls.memory.running(row.id)), lambda r: not r)
    await engine.reconciler.pass_once()
    row = await row_of(world, start.run_id, call_id)
    assert row.status == "settled"
    assert row.result["error"]["code"] == "tool_call_interrupted_by_restart"
    assert tool.lookups and tool.runs == 1


def peer_runner(engine) -> uuid.UUID:
    [runner_id] = list(engine.connections.links)
    return runner_id


async def test_a_stop_lets_a_running_callback_save_its_result_within_the_grace(scene):
    world, engine, peer, start, tool = scene
    call_id = send_call(peer, start)
    await asyncio.wait_for(tool.entered.wait(), 10)

    stopping = asyncio.create_task(engine.stop())
    await asyncio.sleep(0.1)
    tool.release.set()  # it finishes while the stop waits for it
    await asyncio.wait_for(stopping, 10)
    row = await row_of(world, start.run_id, call_id)
    assert row.status == "settled" and row.result == {"done": True}


async def test_a_stop_cancels_a_callback_that_outlives_the_grace_and_leaves_it_pending(
    scene, monkeypatch
):
    import paperclip.engine.engine as engine_module

    monkeypatch.setattr(engine_module, "PLUGIN_CALL_GRACE_SECONDS", 0.2)
    world, engine, peer, start, tool = scene
    call_id = send_call(peer, start)
    await asyncio.wait_for(tool.entered.wait(), 10)

    await asyncio.wait_for(engine.stop(), 10)  # the tool never returns
    # No task of the stopped engine is left holding a transaction (and its locks).
    assert not engine.calls.plugin_calls._tasks
    assert (await row_of(world, start.run_id, call_id)).status == "pending"  # recovery's to decide
    assert tool.runs == 1
