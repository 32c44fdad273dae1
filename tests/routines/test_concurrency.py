"""The concurrency policies with a slow run: a slot comes while the last one's issue is open.

In memory, with a runner peer that holds the first run as long as the test
wants; the scheduler's clock is the test's.
"""

from __future__ import annotations

import pytest

from paperclip.models import Run
from paperclip.wire import messages as wire
from tests.engine.memory_world import call, finished, started


async def slow_first_run(routines, concurrency: str):
    """A routine every minute; its 00:00 slot's run started and still running at 00:01."""
    peer, _ = await routines.world.connect(await routines.world.new_runner())
    routine_id = await routines.routine(cron="* * * * *", concurrency=concurrency)
    await routines.tick()
    await routines.at(2026, 3, 1, 0, 0, 5)
    first = await started(peer)
    second = await routines.at(2026, 3, 1, 0, 1, 5)
    return peer, routine_id, first, second


async def finish(routines, peer, start) -> None:
    result = await call(peer, start, "finish", outcome="done", summary="done")
    assert result.content["accepted"], result.content
    peer.send(finished(start, answer="Done."))
    await routines.world.until_ended(start.run_id)


async def no_start_turn(peer, within: float = 0.5) -> None:
    with pytest.raises(TimeoutError):
        await peer.expect(wire.StartTurn, within=within)


async def test_skip_if_open_skips_the_slot_while_the_last_issue_is_open(routines):
    peer, routine_id, first, second = await slow_first_run(routines, "skip_if_open")
    [skipped] = second.executions
    assert (skipped.status, skipped.reason, skipped.issue_id) == ("skipped", "open_execution", None)
    await no_start_turn(peer)

    await finish(routines, peer, first)
    await routines.at(2026, 3, 1, 0, 2, 5)
    await started(peer)  # the issue closed: the next slot runs
    statuses = [(e.slot_at.minute, e.status) for e in await routines.executions(routine_id)]
    assert statuses == [(0, "started"), (1, "skipped"), (2, "started")]
    assert await routines.issues() == 2


async def test_queue_starts_the_queued_slot_once_the_open_issue_closed(routines):
    peer, routine_id, first, second = await slow_first_run(routines, "queue")
    [queued] = second.executions
    assert (queued.status, queued.reason, queued.issue_id) == ("queued", "open_execution", None)
    assert not (await routines.at(2026, 3, 1, 0, 1, 30)).started_from_queue  # still open
    await no_start_turn(peer)

    await finish(routines, peer, first)
    promoted = await routines.at(2026, 3, 1, 0, 1, 40)
    assert [e.id for e in promoted.started_from_queue] == [queued.id]
    second_run = await started(peer)
    third = await routines.at(2026, 3, 1, 0, 2, 5)  # the 00:01 slot's issue is open now
    assert [e.status for e in third.executions] == ["queued"]
    await finish(routines, peer, second_run)
    await routines.at(2026, 3, 1, 0, 2, 10)
    await started(peer)
    statuses = [(e.slot_at.minute, e.status) for e in await routines.executions(routine_id)]
    assert statuses == [(0, "started"), (1, "started"), (2, "started")]
    assert await routines.issues() == 3


async def test_allow_overlaps_a_second_run_with_the_slow_one(routines):
    peer, _, first, second = await slow_first_run(routines, "allow")
    assert [e.status for e in second.executions] == ["started"]
    overlap = await started(peer)
    assert overlap.run_id != first.run_id and overlap.issue_id != first.issue_id
    async with routines.container.sessions()() as session:
        runs = [await session.get(Run, r) for r in (first.run_id, overlap.run_id)]
    assert [r.status for r in runs] == ["running", "running"]
    await finish(routines, peer, first)
    await finish(routines, peer, overlap)


async def test_a_slot_whose_budget_is_spent_is_skipped(routines):
    from paperclip.common.actor import LOCAL_OPERATOR
    from paperclip.models import BudgetMonth

    peer, _ = await routines.world.connect(await routines.world.new_runner())
    made = await routines.world.container.budgets().create(
        LOCAL_OPERATOR,
        routines.world.company_id,
        scope="agent",
        scope_id=routines.world.agent_id,
        monthly_limit_micros=1000,
        warn_percent=80,
        run_reserve_micros=0,
        currency="USD",
    )
    async with routines.container.sessions().begin() as session:
        session.add(BudgetMonth(budget_id=made.budget.id, month="2026-03", spent_micros=1000))
    routine_id = await routines.routine(cron="0 * * * *")  # hourly, from March (the clock's)
    await routines.tick()
    over = await routines.at(2026, 3, 1, 0, 0, 5)
    [skipped] = over.executions
    assert (skipped.status, skipped.reason, skipped.issue_id) == (
        "skipped",
        "budget_exceeded",
        None,
    )
    await no_start_turn(peer)
    statuses = [(e.slot_at.hour, e.status) for e in await routines.executions(routine_id)]
    assert statuses == [(0, "skipped")] and await routines.issues() == 0
