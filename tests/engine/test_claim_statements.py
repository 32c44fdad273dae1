"""What a claim costs PostgreSQL, counted statement by statement (not timed: the count is exact).

The engine is not started (``quiet_world``): each pass is this test's own
call, the wake listener runs alone (so the scheduler knows notifications
reach it), and a runner is connected in memory.
"""

from __future__ import annotations

import asyncio
import re

from paperclip.domain.runs.wakes import notify_resumption
from paperclip.wire import messages as wire
from tests.engine.memory_world import eventually, started
from tests.support.statements import statements_of

STATEMENTS_PER_PASS = 2
"""What a claim pass sends besides its BEGIN and COMMIT, however many wakes it claims: the
claim (the wakes locked, with everything their runs stand on) and the write (each run and all
it starts with). One claim cost 20 statements and two transactions before (issue 63). Raise
it only for a reason worth a round trip on every wake."""
STATEMENTS_PER_TURN_END = 2
"""A plain turn end's (a failed turn, or a report the terminal guard accepts): the run locked
with what decides its end, and the status decision (14 through the ORM before)."""
RESUMABLE = ("runs.phase = ", "SKIP LOCKED")
"""The words of the resumption scan (``recovery.resumption.resumable``)."""
LEASED = ("min(greatest(coalesce(runs.lease_expires_at",)
"""The words of the look that follows it (``recovery.resumption.leased_resumable``)."""
LINK = re.compile(
    r"^\s*(SELECT runner_outbox\.|DELETE FROM runner_outbox|UPDATE runners SET (in_seq|acked_seq)"
    r"|SELECT runners\.revoked_at)"
)
"""A runner link's own statements (its outbox read on its poll, its position saved), which
may fall in any pass's time."""


def passes(log) -> list[str]:
    """The statements of the scheduler's passes among those ``log`` counted."""
    return [s for s in log.statements if not LINK.match(s)]


def looks(log) -> int:
    """The statements of its looks for queued turns of lost runs."""
    return len(log.matching(*RESUMABLE)) + len(log.matching(*LEASED))


def engines(world):
    """Both of a replica's pools: the claims' statements are planned once (the journal's pool)."""
    return [world.container.engine(), world.container.journal_engine()]


async def test_one_claim_costs_two_statements_in_one_transaction(quiet_world):
    world = quiet_world
    await world.assign()
    async with statements_of(*engines(world)) as sent:
        assert await world.engine.claim_wakes() == 1
    start = await started(world.peer)
    assert len(passes(sent)) <= STATEMENTS_PER_PASS, sent.brief()
    assert sent.transactions == 1
    assert not sent.matching(*RESUMABLE)  # nothing said a lost run waits
    assert start.prompt and start.token


async def test_a_pass_of_several_wakes_costs_what_one_claim_does(quiet_world):
    world = quiet_world
    for n in range(5):
        await world.assign(f"Fix the build {n}")
    async with statements_of(*engines(world)) as sent:
        assert await world.engine.claim_wakes() == 5
    for _ in range(5):
        await started(world.peer)
    assert len(passes(sent)) <= STATEMENTS_PER_PASS, sent.brief()
    assert sent.transactions == 1


async def test_a_pass_with_no_resumable_run_sends_no_resumption_query(quiet_world):
    world = quiet_world
    async with statements_of(*engines(world)) as idle:
        assert await world.engine.claim_wakes() == 0
    assert not idle.matching(*RESUMABLE), idle.brief()
    assert len(passes(idle)) == 1  # the claim, which found nothing

    # A lost run's settlement tells every scheduler: a pass looks once it is told.
    async with world.container.sessions().begin() as session:
        await notify_resumption(session)

    async def scans() -> int:
        async with statements_of(*engines(world)) as sent:
            assert await world.engine.claim_wakes() == 0
        return len(sent.matching(*RESUMABLE))

    assert await eventually(scans, lambda n: n > 0, within=5) == 1

    async with statements_of(*engines(world)) as after:
        assert await world.engine.claim_wakes() == 0
    assert not after.matching(*RESUMABLE), after.brief()


async def test_a_runner_that_connects_makes_the_next_pass_look_for_resumptions(quiet_world):
    world = quiet_world
    second, task = await world.connect(await world.new_runner())
    await asyncio.wait_for(world.engine.scheduler.resumptions.wait(), 10)
    async with statements_of(*engines(world)) as sent:
        assert await world.engine.claim_wakes() == 0
    assert len(sent.matching(*RESUMABLE)) == 1, sent.brief()
    second.transport.hang_up()
    await asyncio.wait_for(task, 10)


async def test_a_plain_turn_end_costs_two_statements(quiet_world):
    world = quiet_world
    await world.assign()
    assert await world.engine.claim_wakes() == 1
    start = await started(world.peer)
    finished = asyncio.Event()
    endings = world.engine.endings
    original = endings.turn_finished

    async def observed(link, message):
        try:
            await original(link, message)
        finally:
            finished.set()

    endings.turn_finished = observed
    async with statements_of(*engines(world)) as sent:
        world.peer.send(
            wire.TurnFinished(seq=0, run_id=start.run_id, status="failed", error="no model")
        )
        await asyncio.wait_for(finished.wait(), 10)
    own = [s for s in sent.statements if ENDING_TABLES.search(s)]
    assert len(own) <= STATEMENTS_PER_TURN_END, sent.brief()
    run = await world.until_ended(start.run_id)
    assert (run.status, run.error_code) == ("failed", "provider_turn_failed")
    await world.peer.expect(wire.Close, run_id=start.run_id)


ENDING_TABLES = re.compile(
    r"\b(runs|run_turns|run_events|run_tokens|tool_calls|issues|activity_log|conversation_turns"
    r"|run_reservations)\b"
)
"""A statement of the turn's end (the link's own, on its outbox and position, are not)."""


async def test_one_pass_queues_each_runners_start_turns_in_its_own_order(quiet_world):
    world = quiet_world
    second, task = await world.connect(await world.new_runner())
    await asyncio.wait_for(world.engine.scheduler.resumptions.wait(), 10)
    for n in range(4):
        await world.assign(f"Fix the build {n}")
    async with statements_of(*engines(world)) as sent:
        assert await world.engine.claim_wakes() == 4
    assert looks(sent) == 2  # the runner that connected: a look for queued turns
    assert len(passes(sent)) - looks(sent) <= STATEMENTS_PER_PASS, sent.brief()
    seqs = [[(await started(peer)).seq for _ in range(2)] for peer in (world.peer, second)]
    for first, then in seqs:
        assert then == first + 1, seqs  # each runner's outbox counter moved once per start
    second.transport.hang_up()
    await asyncio.wait_for(task, 10)
