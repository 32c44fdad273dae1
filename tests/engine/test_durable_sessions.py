"""Runs outlive their runner and provider processes: lost turns go on, settled once.

In memory (the real engine and PostgreSQL, runners without sockets), with the
``lost_runs`` recovery policy installed on the plugin host.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from paperclip_hookspecs.providers import ProviderCapabilities
from sqlalchemy import func, select, text, update

from paperclip.engine.scheduling import scheduler
from paperclip.models import (
    RecoverySettlement,
    Run,
    RunStatus,
    RunTurn,
    TaskHold,
    TurnStatus,
    WakeRequest,
    WakeStatus,
)
from paperclip.wire import messages as wire
from tests.engine.memory_world import (
    EchoProvider,
    World,
    call,
    eventually,
    finished,
    make_world,
    started,
)
from tests.support.memory import MemoryRunner

pytestmark = pytest.mark.installed_plugins

RESUMABLE = ProviderCapabilities(resume=True, fresh_retry=True)


@pytest.fixture(autouse=True)
async def earlier_runs_ended(paperclip_container: Any) -> None:
    """Each test starts from an empty world. The module's database keeps what earlier
    tests left waiting (a queued next turn is any runner's to take, as it should be);
    those runs, turns and wakes are ended first."""
    async with paperclip_container.sessions()() as session, session.begin():
        await session.execute(
            update(RunTurn)
            .where(RunTurn.status.in_([TurnStatus.STARTING, TurnStatus.RUNNING]))
            .values(status=TurnStatus.FAILED)
        )
        await session.execute(
            update(Run)
            .where(Run.status.in_([RunStatus.QUEUED, RunStatus.RUNNING]))
            .values(status=RunStatus.CANCELLED, finished_at=func.now())
        )
        await session.execute(
            update(WakeRequest)
            .where(WakeRequest.status == WakeStatus.QUEUED)
            .values(status=WakeStatus.SKIPPED)
        )


@pytest.fixture
def policy(paperclip_register_plugin: Any) -> None:
    from paperclip_lost_runs import plugin

    paperclip_register_plugin(plugin, name="lost-runs")


async def start_world(
    container: Any, host: Any, register: Any, capabilities: ProviderCapabilities, **options: Any
) -> tuple[World, Any]:
    register(EchoProvider(capabilities), name="echo-provider")
    world, engine = await make_world(container, host, register, reconcile_seconds=0.2, **options)
    await engine.start()
    return world, engine


@pytest.fixture
async def resumable_world(
    paperclip_container, paperclip_plugin_host, paperclip_register_plugin, policy
) -> AsyncIterator[World]:
    world, engine = await start_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin, RESUMABLE
    )
    try:
        yield world
    finally:
        await engine.stop()


async def turns(world: World, run_id: uuid.UUID) -> list[tuple[int, str, str, str | None]]:
    async with world.container.sessions()() as session:
        rows = await session.execute(
            select(RunTurn.number, RunTurn.kind, RunTurn.status, RunTurn.session_ref)
            .where(RunTurn.run_id == run_id)
            .order_by(RunTurn.number)
        )
        return [tuple(row) for row in rows]


async def test_a_runner_restart_resumes_the_session_with_a_restart_continuation(
    resumable_world,
):
    world = resumable_world
    runner_id = await world.new_runner()
    first, first_task = await world.connect(runner_id)
    await world.assign()
    start = await started(first)
    first.send(wire.TurnStarted(seq=0, run_id=start.run_id, turn=1, session_ref="thread-1"))
    await eventually(
        lambda: world.run(start.run_id), lambda r: r.session_ref == "thread-1"
    )  # durable as soon as reported
    first.transport.hang_up()
    await asyncio.wait_for(first_task, 5)

    second = MemoryRunner()  # the runner's next process: it hosts nothing
    await world.connect(runner_id, second, runs=[])
    resumed = await started(second, within=15)
    assert (resumed.run_id, resumed.turn, resumed.session_ref) == (start.run_id, 2, "thread-1")
    assert "interrupted by a restart" in resumed.prompt
    assert resumed.token != start.token  # the lost turn's token died with it
    second.send(finished(resumed))
    nudge = await started(second, turn=3)  # it ended unreported: asked for its report
    assert nudge.session_ref == "thread-1"
    second.send(finished(nudge))
    run = await world.until_ended(start.run_id)
    assert run.status == "failed" and run.error_code == "finish_not_called"
    assert await turns(world, start.run_id) == [
        (1, "initial", "lost", "thread-1"),
        (2, "continuation", "completed", "thread-1"),
        (3, "report_nudge", "completed", "thread-1"),
    ]
    assert (run.resume_attempts, run.turn) == (1, 3)


async def test_a_provider_that_exited_goes_on_in_the_same_runner(resumable_world):
    world = resumable_world
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    start = await started(peer)
    peer.send(wire.TurnStarted(seq=0, run_id=start.run_id, turn=1, session_ref="thread-7"))
    peer.send(
        finished(
            start,
            status="failed",
            error_code="provider_exited",
            error="killed",
            session_ref="thread-7",
        )
    )
    resumed = await started(peer, within=15, turn=2)
    assert resumed.session_ref == "thread-7"
    await call(peer, resumed, "finish", outcome="done", summary="done after a restart")
    peer.send(finished(resumed, answer="Done."))
    run = await world.until_ended(start.run_id)
    assert (run.status, run.turn, run.resume_attempts) == ("succeeded", 2, 1)


async def test_lost_too_often_the_run_fails_and_its_task_is_held(
    paperclip_container, paperclip_plugin_host, paperclip_register_plugin, policy
):
    world, engine = await start_world(
        paperclip_container,
        paperclip_plugin_host,
        paperclip_register_plugin,
        RESUMABLE,
        max_resumes=1,
    )
    try:
        peer, _ = await world.connect(await world.new_runner())
        issue_id = await world.assign()
        start = await started(peer)
        peer.send(finished(start, status="failed", error_code="provider_exited"))
        again = await started(peer, within=15, turn=2)
        peer.send(finished(again, status="failed", error_code="provider_exited"))
        run = await world.until_ended(start.run_id, within=15)
        assert (run.status, run.error_code) == ("failed", "run_retries_exhausted")
        async with world.container.sessions()() as session:
            [hold] = (
                await session.execute(select(TaskHold).where(TaskHold.issue_id == issue_id))
            ).scalars()
        assert (hold.kind, hold.status, hold.set_by) == (
            "run_retries_exhausted",
            "active",
            "system",
        )
        assert "resolve this hold" in hold.reason

        # Held: a new wake of the task starts nothing until the hold is resolved.
        from paperclip.common.actor import LOCAL_OPERATOR

        await world.container.wakes().wake_agent(
            LOCAL_OPERATOR,
            world.company_id,
            world.agent_id,
            issue_id=issue_id,
            reason="try again",
            payload={},
            idempotency_key=None,
        )
        assert await world.engine.claim_wakes() == 0
        await world.container.holds().resolve(
            LOCAL_OPERATOR, world.company_id, hold.id, resolution="retried"
        )
        fresh = await started(peer, within=15)
        assert fresh.run_id != start.run_id
    finally:
        await engine.stop()


async def test_a_runner_that_never_comes_back_hands_its_run_to_another(
    paperclip_container, paperclip_plugin_host, paperclip_register_plugin, policy
):
    world, engine = await start_world(
        paperclip_container,
        paperclip_plugin_host,
        paperclip_register_plugin,
        RESUMABLE,
        runner_gone_after=0.2,
    )
    try:
        first, first_task = await world.connect(await world.new_runner())
        await world.assign()
        start = await started(first)
        first.transport.hang_up()
        await asyncio.wait_for(first_task, 5)

        other, _ = await world.connect(await world.new_runner())  # another machine's runner
        resumed = await started(other, within=20)
        assert (resumed.run_id, resumed.turn) == (start.run_id, 2)
    finally:
        await engine.stop()


async def test_with_no_runner_at_all_the_task_ends_held_with_the_reason(
    paperclip_container, paperclip_plugin_host, paperclip_register_plugin, policy
):
    world, engine = await start_world(
        paperclip_container,
        paperclip_plugin_host,
        paperclip_register_plugin,
        RESUMABLE,
        runner_gone_after=0.2,
        abandon_after=1.0,
    )
    try:
        first, first_task = await world.connect(await world.new_runner())
        issue_id = await world.assign()
        start = await started(first)
        first.transport.hang_up()
        await asyncio.wait_for(first_task, 5)

        run = await world.until_ended(start.run_id, within=30)
        assert (run.status, run.error_code) == ("failed", "runner_unavailable")
        async with world.container.sessions()() as session:
            [hold] = (
                await session.execute(select(TaskHold).where(TaskHold.issue_id == issue_id))
            ).scalars()
        assert hold.kind == "runner_unavailable"
        assert "no runner offering the 'echo' provider connected" in hold.reason
    finally:
        await engine.stop()


async def test_two_replicas_settle_a_lost_run_once(
    paperclip_container, paperclip_plugin_host, paperclip_register_plugin, policy
):
    paperclip_register_plugin(EchoProvider(RESUMABLE), name="echo-provider")
    world, engine = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    _, other_engine = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    await engine.start()
    try:
        runner_id = await world.new_runner()
        peer, task = await world.connect(runner_id)
        await world.assign()
        start = await started(peer)
        peer.send(wire.TurnStarted(seq=0, run_id=start.run_id, turn=1, session_ref="thread-3"))
        peer.send(finished(start, status="failed", error_code="provider_exited"))
        peer.transport.hang_up()  # no runner takes the next turn: it stays queued
        await asyncio.wait_for(task, 5)
        await engine.stop()  # from here on, only the two passes below act

        # Both replicas' reconcilers see the same candidate and race to settle it.
        await asyncio.gather(engine.reconciler.pass_once(), other_engine.reconciler.pass_once())
        async with world.container.sessions()() as session:
            settlements = (
                await session.execute(
                    select(func.count())
                    .select_from(RecoverySettlement)
                    .where(RecoverySettlement.key == f"{start.run_id}:1")
                )
            ).scalar_one()
        assert settlements == 1
        assert [t[:3] for t in await turns(world, start.run_id)] == [
            (1, "initial", "lost"),
            (2, "continuation", "starting"),
        ]
        run = await world.run(start.run_id)
        assert (run.phase, run.resume_attempts) == ("resuming", 1)
    finally:
        await engine.stop()
        await other_engine.stop()


async def test_a_queued_turn_passed_over_while_its_row_was_locked_is_looked_for_again(
    paperclip_container, paperclip_plugin_host, paperclip_register_plugin, policy, caplog
):
    """A scheduler looks for queued turns when told to, ``SKIP LOCKED``: a row another
    transaction held at that moment (a lease renewal letting go of it, another replica's pass)
    is passed over, and the notification is spent. It looks again by itself, not only on the
    slow poll (``RESUME_POLL_SECONDS``, 30 s). Found under load: the run stayed queued."""
    caplog.set_level(logging.DEBUG, logger=scheduler.__name__)
    world, engine = await start_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin, RESUMABLE
    )
    try:
        first, first_task = await world.connect(await world.new_runner())
        await world.assign()
        start = await started(first)
        first.send(finished(start, status="failed", error_code="provider_exited"))
        first.transport.hang_up()  # no runner here: the queued turn waits, nobody looks
        await asyncio.wait_for(first_task, 5)
        await eventually(lambda: world.run(start.run_id), lambda run: run.phase == "resuming")

        async def looked() -> int:
            return sum("looked for queued turns" in r.getMessage() for r in caplog.records)

        async with world.container.sessions().begin() as side:
            # Locked as a concurrent pass or renewal would; the settlement wrote before it.
            await side.execute(
                text("SELECT 1 FROM runs WHERE id = :id FOR KEY SHARE"), {"id": start.run_id}
            )
            before = await looked()
            other, _ = await world.connect(await world.new_runner())  # it looks: passed over
            await eventually(looked, lambda count: count > before)
            assert (await world.run(start.run_id)).phase == "resuming"
        resumed = await started(other, within=5, turn=2)
        assert resumed.run_id == start.run_id
    finally:
        await engine.stop()
