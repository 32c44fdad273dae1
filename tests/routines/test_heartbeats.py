"""Agents' heartbeats on a fake clock: an idle agent woken on time, a busy one never twice."""

from __future__ import annotations

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.models import AgentStatus, WakeRequest
from paperclip.wire import messages as wire
from tests.engine.memory_world import finished, started
from tests.routines.test_concurrency import no_start_turn

INTERVAL = 600


async def every(routines, seconds: int | None) -> None:
    await routines.container.agents().update(
        LOCAL_OPERATOR,
        routines.world.company_id,
        routines.world.agent_id,
        {"heartbeat_seconds": seconds},
        routines.world.check_config,
    )


async def open_issue_and_idle(routines, peer) -> str:
    """An issue assigned to the agent whose run failed: open (todo), and the agent idle."""
    issue_id = await routines.world.assign("Keep the docs current")
    start = await started(peer)
    peer.send(finished(start, status="failed", error="the endpoint went away"))
    await routines.world.until_ended(start.run_id)
    assert await routines.world.issue_status(issue_id) == "todo"
    async with routines.container.sessions()() as session:
        from paperclip.models import Issue

        return (await session.get(Issue, issue_id)).identifier


async def test_an_idle_agent_with_an_open_issue_is_woken_on_time(routines):
    peer, _ = await routines.world.connect(await routines.world.new_runner())
    identifier = await open_issue_and_idle(routines, peer)
    await every(routines, INTERVAL)
    [first] = (await routines.at(2026, 3, 1, 0, 0)).beats
    assert first.outcome == "scheduled"  # counted from the scheduler's now

    early = await routines.at(2026, 3, 1, 0, 9, 59)
    assert early.beats == [] and not await routines.wakes(source="heartbeat")
    [beat] = (await routines.at(2026, 3, 1, 0, 10)).beats
    assert beat.outcome == "woken"
    [wake] = await routines.wakes(source="heartbeat")
    assert wake.issue_id is None and wake.id == beat.wake_id

    start = await started(peer)
    assert start.issue_id is None
    assert "Heartbeat: nobody asked for anything new" in start.prompt
    assert identifier in start.prompt and "Keep the docs current" in start.prompt
    async with routines.container.sessions()() as session:
        from paperclip.models import Agent

        agent = await session.get(Agent, routines.world.agent_id)
    assert agent.heartbeat_due_at == routines.clock.now.replace(minute=20)


async def test_a_busy_agent_is_not_woken_twice(routines):
    peer, _ = await routines.world.connect(await routines.world.new_runner())
    await every(routines, INTERVAL)
    await routines.at(2026, 3, 1, 0, 0)
    await routines.world.assign("A long migration")
    slow = await started(peer)
    for minute in (10, 20, 30, 40):  # four intervals while the run goes on
        [beat] = (await routines.at(2026, 3, 1, 0, minute, 1)).beats
        assert beat.outcome == "busy"
    assert not await routines.wakes(source="heartbeat")
    await no_start_turn(peer)

    peer.send(finished(slow, status="failed", error="stopped"))
    await routines.world.until_ended(slow.run_id)
    [beat] = (await routines.at(2026, 3, 1, 0, 50, 2)).beats
    assert beat.outcome == "woken"
    assert len(await routines.wakes(source="heartbeat")) == 1
    await peer.expect(wire.StartTurn, issue_id=None)


async def test_a_beat_folds_into_a_wake_already_pending_and_a_paused_agent_sleeps(routines):
    await every(routines, INTERVAL)  # no runner: the assignment's wake stays queued
    await routines.at(2026, 3, 1, 0, 0)
    await routines.world.assign("Waiting for a runner")
    [beat] = (await routines.at(2026, 3, 1, 0, 10)).beats
    assert beat.outcome == "coalesced"
    [pending] = await routines.wakes(status="queued")
    assert (pending.source, pending.coalesced_count, pending.id) == ("assignment", 1, beat.wake_id)

    await routines.container.agents().set_status(
        LOCAL_OPERATOR, routines.world.company_id, routines.world.agent_id, AgentStatus.PAUSED
    )
    [beat] = (await routines.at(2026, 3, 1, 0, 20)).beats
    assert beat.outcome == "paused"
    assert await routines.count(WakeRequest) == 1


async def test_turning_the_heartbeat_off_stops_it(routines):
    await every(routines, INTERVAL)
    await routines.at(2026, 3, 1, 0, 0)
    await every(routines, None)
    assert (await routines.at(2026, 3, 1, 1, 0)).beats == []
    assert not await routines.wakes(source="heartbeat")
