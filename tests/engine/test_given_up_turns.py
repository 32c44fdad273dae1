"""A turn the control plane gave up never starts later (found by ``paperclip chaos``).

Its runner dropped before it took the turn's ``start_turn``, and stayed away past
its lease: the turn counts lost and the run goes on in the next one, which
carries the steers the lost turn carried. Had the runner's next process still
received the given-up ``start_turn`` from the outbox, it would start both turns
in one session, and the model would read those steers twice.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from paperclip_hookspecs.providers import ProviderCapabilities
from sqlalchemy import func, select

from paperclip.engine.resumption import Limits, settle_lost_run
from paperclip.models import Run, RunnerMessage
from paperclip.wire import messages as wire
from tests.engine.memory_world import EchoProvider, eventually, make_world, started
from tests.support.memory import MemoryRunner

pytestmark = pytest.mark.installed_plugins


@pytest.fixture
async def world(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    from paperclip_lost_runs import plugin

    paperclip_register_plugin(plugin, name="lost-runs")
    paperclip_register_plugin(
        EchoProvider(ProviderCapabilities(resume=True, fresh_retry=True)), name="echo-provider"
    )
    built, engine = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    await engine.start()
    try:
        yield built
    finally:
        await engine.stop()


async def starts_queued(world, run_id) -> int:
    async with world.container.sessions()() as session:
        return await session.scalar(
            select(func.count())
            .select_from(RunnerMessage)
            .where(RunnerMessage.run_id == run_id, RunnerMessage.type == "start_turn")
        )


async def give_up(world, run_id, reason: str) -> str:
    """What the reconciler does with a lost run: its turn ends lost, the next one is queued."""
    async with world.container.sessions().begin() as session:
        run = await session.get(Run, run_id, with_for_update=True)
        return await settle_lost_run(
            session,
            run,
            world.engine.port.plugins,
            Limits(3, timedelta(seconds=600)),
            reason=reason,
        )


async def test_a_turn_given_up_before_its_runner_took_it_never_starts(world):
    runner_id = await world.new_runner()
    first, first_task = await world.connect(runner_id)
    await world.assign()
    start = await started(first)
    first.send(wire.TurnStarted(seq=0, run_id=start.run_id, turn=1, session_ref="thread-1"))
    await eventually(lambda: world.run(start.run_id), lambda r: r.session_ref == "thread-1")
    first.transport.hang_up()
    await asyncio.wait_for(first_task, 5)
    assert await give_up(world, start.run_id, "runner_restarted") == "resuming"

    # The runner's next process is sent turn 2, and drops before it takes it.
    second, second_task = await world.connect(runner_id, MemoryRunner(), runs=[])
    await eventually(lambda: world.turn(start.run_id, 2), lambda t: t is not None)
    await eventually(lambda: starts_queued(world, start.run_id), lambda n: n == 1)
    second.transport.hang_up()
    await asyncio.wait_for(second_task, 5)

    # Away past its lease: turn 2 is given up too, and turn 3 waits for any runner.
    assert await give_up(world, start.run_id, "runner_gone") == "resuming"
    assert await starts_queued(world, start.run_id) == 0  # taken back with its turn

    third = MemoryRunner()  # the next process again: it reads the outbox from the start
    await world.connect(runner_id, third, runs=[])
    resumed = await started(third, within=15)
    assert (resumed.run_id, resumed.turn) == (start.run_id, 3)
    assert [m.turn for m in third.received if isinstance(m, wire.StartTurn)] == [3]
