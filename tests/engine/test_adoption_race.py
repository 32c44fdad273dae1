"""A runner's next process reconnects while the run it lost is being settled elsewhere.

The replica serving the reconnection lists the runner's runs, then waits for
each one's lease; meanwhile another replica's reconciler settles the lost turn
and queues the next one for any runner (``resuming``). The adoption must not
mark that queued turn lost: the run's next turn starts. (Found by
``paperclip chaos``: every wake claim then failed on the run.)
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from paperclip_hookspecs.providers import ProviderCapabilities
from sqlalchemy import func, select

from paperclip.engine.recovery.resumption import Limits, settle_lost_run
from paperclip.engine.turns.lifecycle import end_turn
from paperclip.models import Run, RunnerMessage, RunTurn, TurnStatus
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


async def turn_statuses(world: Any, run_id: Any) -> list[tuple[int, str]]:
    async with world.container.sessions()() as session:
        rows = await session.execute(
            select(RunTurn.number, RunTurn.status)
            .where(RunTurn.run_id == run_id)
            .order_by(RunTurn.number)
        )
        return [tuple(row) for row in rows]


async def test_a_turn_queued_while_the_runner_reconnects_is_not_lost(world):
    runner_id = await world.new_runner()
    first, first_task = await world.connect(runner_id)
    await world.assign()
    start = await started(first)
    first.send(wire.TurnStarted(seq=0, run_id=start.run_id, turn=1, session_ref="thread-1"))
    await eventually(lambda: world.run(start.run_id), lambda r: r.session_ref == "thread-1")
    first.transport.hang_up()
    await asyncio.wait_for(first_task, 5)

    # Another replica holds the run's lease for a moment more.
    world.engine.ownership.release(start.run_id)
    sessions = world.container.sessions()
    async with sessions.begin() as session:
        run = await session.get(Run, start.run_id, with_for_update=True)
        run.controller_instance = "replica-elsewhere"
        run.controller_epoch += 1
        run.lease_expires_at = datetime.now(UTC) + timedelta(seconds=1.5)

    second = MemoryRunner()  # the runner's next process: it hosts nothing
    await world.connect(runner_id, second, runs=[])
    await asyncio.sleep(0.5)  # this replica listed the run and waits for its lease

    # That replica's reconciler settles the lost turn: the next one waits for any runner.
    async with sessions.begin() as session:
        run = await session.get(Run, start.run_id, with_for_update=True)
        await end_turn(session, run, 1, TurnStatus.LOST, error_code="runner_restarted")
        outcome = await settle_lost_run(
            session,
            run,
            world.engine.port.plugins,
            Limits(3, timedelta(seconds=600)),
            reason="runner_restarted",
        )
    assert outcome == "resuming"

    resumed = await started(second, within=15)
    assert (resumed.run_id, resumed.turn) == (start.run_id, 2)
    assert await turn_statuses(world, start.run_id) == [(1, "lost"), (2, "starting")]


async def test_an_adopted_run_that_changed_controller_before_its_recovery_is_one_log_line(
    world, caplog
):
    # Adopted to start its next turn, then its lease moved on before the recovery of its
    # inputs began (seen under `paperclip chaos`): an unretrieved task exception before.
    caplog.set_level(logging.INFO, logger="paperclip.engine.recovery.call_recovery")
    run_id = uuid.uuid4()  # not controlled here
    world.engine.call_recovery.adopted(SimpleNamespace(runner_id=uuid.uuid4()), run_id)
    await asyncio.gather(*world.engine.call_recovery.adoptions)
    assert f"run {run_id} changed controller" in caplog.text


# A turn the control plane gave up never starts later (found by ``paperclip chaos``):
# its runner dropped before it took the turn's ``start_turn`` and stayed away past its
# lease, so the run went on in the next turn, which carries the steers the lost one
# carried. Had the runner's next process still received the given-up ``start_turn``
# from the outbox, it would start both turns in one session, and the model would read
# those steers twice.


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


# Taking a queued turn over moves the epoch once, through the one owner of adoption
# (``ownership.leases``), whether the turn then starts or the run ends for its budget.


async def lost_and_queued(world) -> tuple[Any, uuid.UUID, Run]:
    runner_id = await world.new_runner()
    first, first_task = await world.connect(runner_id)
    await world.assign()
    start = await started(first)
    first.send(wire.TurnStarted(seq=0, run_id=start.run_id, turn=1, session_ref="thread-1"))
    await eventually(lambda: world.run(start.run_id), lambda r: r.session_ref == "thread-1")
    first.transport.hang_up()
    await asyncio.wait_for(first_task, 5)
    assert await give_up(world, start.run_id, "runner_restarted") == "resuming"
    return runner_id, start.run_id, await world.run(start.run_id)


async def test_a_resumed_turn_moves_the_epoch_once(world):
    runner_id, run_id, before = await lost_and_queued(world)
    second = MemoryRunner()
    await world.connect(runner_id, second, runs=[])
    assert (await started(second, within=15)).turn == 2
    after = await world.run(run_id)
    assert after.controller_epoch == before.controller_epoch + 1
    assert after.controller_instance == world.engine.instance
    assert after.lease_expires_at > datetime.now(UTC)
    assert world.engine.ownership.epoch(run_id) == after.controller_epoch


async def test_a_queued_turn_over_its_budget_is_taken_over_to_end_the_run(world):
    runner_id, run_id, before = await lost_and_queued(world)
    async with world.container.sessions().begin() as session:
        run = await session.get(Run, run_id, with_for_update=True)
        run.budget_stop_at = datetime.now(UTC)
    await world.connect(runner_id, MemoryRunner(), runs=[])
    after = await eventually(lambda: world.run(run_id), lambda r: r.status == "failed")
    assert after.error_code == "budget_exceeded"
    assert after.controller_epoch == before.controller_epoch + 1
    assert after.controller_instance == world.engine.instance
    assert after.lease_expires_at <= datetime.now(UTC)  # an ended run holds no lease
