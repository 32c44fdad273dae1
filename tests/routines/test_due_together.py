"""Routines due at the same instant: decided together, each slot once, each issue its own number.

Fifty routines of one company due together were fifty transactions, each
holding the company's row from its issue's number to its commit: they queued
on it. A pass now decides them in one transaction of a fixed number of
statements, and takes their numbers in one statement of its own.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

from sqlalchemy import Uuid, event, literal, select
from sqlalchemy.ext.asyncio import async_sessionmaker

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.db.engine import create_engine
from paperclip.domain.companies.companies import _lock_keys, company_lock_key
from paperclip.engine.scheduling.routines import RoutineScheduler
from paperclip.models import Issue, Routine, RoutineExecution, WakeRequest
from tests.engine.memory_world import finished, started

DUE = datetime(2026, 3, 1, 0, 0, tzinfo=UTC)


async def every_minute(routines, count: int, name: str = "due") -> list:
    made = [
        await routines.routine(name=f"{name}-{i}", cron="* * * * *", concurrency="allow")
        for i in range(count)
    ]
    await routines.tick()  # their schedules start: first slot 00:00
    return made


def replica(routines, engine=None) -> RoutineScheduler:
    """Another replica's routine scheduler on the same database and clock."""
    sessions = routines.container.sessions() if engine is None else async_sessionmaker(engine)
    return RoutineScheduler(sessions, routines.container.issue_numbers(), clock=routines.clock)


async def test_fifty_routines_due_together_each_fire_once_with_their_own_number(routines):
    made = await every_minute(routines, 50)
    routines.clock.set(2026, 3, 1, 0, 0, 1)
    # Two replicas pass at the same instant, side by side.
    first, second = await asyncio.gather(routines.tick(), replica(routines).tick())
    again = await routines.tick()

    decided = first.executions + second.executions
    assert len(decided) == 50 and not again.executions
    assert sorted(e.routine_id for e in decided) == sorted(made)
    async with routines.container.sessions()() as session:
        executions = list(
            (
                await session.execute(
                    select(RoutineExecution).where(RoutineExecution.routine_id.in_(made))
                )
            ).scalars()
        )
        issues = list(
            (
                await session.execute(
                    select(Issue).where(Issue.id.in_([e.issue_id for e in executions]))
                )
            ).scalars()
        )
    assert len(executions) == 50 and {e.slot_at for e in executions} == {DUE}
    assert {e.status for e in executions} == {"started"}
    assert len({e.issue_id for e in executions}) == len(issues) == 50
    numbers = sorted(i.number for i in issues)
    assert numbers == list(range(numbers[0], numbers[0] + 50))  # distinct, and no gap
    assert len({i.identifier for i in issues}) == 50
    wakes = await routines.wakes(source="routine")
    assert sorted(w.issue_id for w in wakes) == sorted(i.id for i in issues)
    assert await routines.issues() == 50


async def test_a_pass_over_routines_due_together_is_a_fixed_number_of_statements(routines):
    """Counted on a replica of its own (the engine's other loops use the container's pool)."""
    engine = create_engine(routines.container.engine().url.render_as_string(hide_password=False))
    statements: list[str] = []
    event.listen(
        engine.sync_engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, *rest: statements.append(statement),
    )
    scheduler = replica(routines, engine)
    try:
        await every_minute(routines, 5, "few")
        await routines.at(2026, 3, 1, 0, 0, 1)  # their first slot
        statements.clear()
        routines.clock.set(2026, 3, 1, 0, 1, 1)
        assert len((await scheduler.tick()).executions) == 5
        few = len(statements)

        await every_minute(routines, 50, "many")  # first slot 00:02, with the five's
        statements.clear()
        routines.clock.set(2026, 3, 1, 0, 2, 1)
        assert len((await scheduler.tick()).executions) == 55
        many = len(statements)
        # Before: about twelve statements a slot (some 600 for fifty).
        assert many <= few + 3 <= 25, (few, many)
    finally:
        await engine.dispose()


async def test_one_pass_decides_each_routine_by_its_own_policy(routines):
    """Routines of every policy due in the same pass (one transaction): each as alone."""
    peer, _ = await routines.world.connect(await routines.world.new_runner())
    skip = await routines.routine(cron="* * * * *", concurrency="skip_if_open")
    queue = await routines.routine(cron="* * * * *", concurrency="queue")
    await routines.tick()
    await routines.at(2026, 3, 1, 0, 0, 5)  # both start; their issues stay open
    first_runs = [await started(peer), await started(peer)]
    allow = await routines.routine(cron="0 * * * *", concurrency="allow")
    late = await routines.routine(
        cron="0 * * * *", concurrency="skip_if_open", catch_up="run_all", catch_up_cap=3
    )
    await routines.tick()  # their first slot: 01:00
    await routines.at(2026, 3, 1, 0, 1, 5)

    both = await routines.at(2026, 3, 1, 3, 0, 5)  # 01:00 and 02:00 are late, 03:00 on time
    decided = [(e.routine_id, e.slot_at.hour, e.status, e.reason) for e in both.executions]
    assert sorted(decided, key=str) == sorted(
        [
            (skip, 3, "skipped", "open_execution"),
            (queue, 3, "queued", "open_execution"),
            (allow, 3, "started", None),
            (late, 1, "started", None),  # the first of its slots makes its issue...
            (late, 2, "skipped", "open_execution"),  # ... and the others find it open
            (late, 3, "skipped", "open_execution"),
        ],
        key=str,
    )
    for run in first_runs:
        peer.send(finished(run, status="failed", error="stopped"))
        await routines.world.until_ended(run.run_id)


async def test_a_routine_that_fails_is_left_due_and_the_others_fire(routines):
    """One routine of the batch fails (its template cannot be filled): the batch is rolled back,
    decided again one routine per transaction, and only that routine is left due."""
    good = await every_minute(routines, 3)
    bad = await routines.routine(name="broken", cron="* * * * *", concurrency="allow")
    await routines.tick()
    async with routines.container.sessions().begin() as session:
        routine = await session.get(Routine, bad)
        routine.timezone = "Nowhere/Atlantis"  # as if a zone left the zone database
    routines.clock.set(2026, 3, 1, 0, 0, 1)
    done = await routines.tick()
    assert sorted({e.routine_id for e in done.executions}) == sorted(good)
    assert not await routines.executions(bad)
    assert await routines.count(WakeRequest, source="routine") == len(done.executions)
    async with routines.container.sessions().begin() as session:
        routine = await session.get(Routine, bad)
        routine.timezone = "UTC"
        routine.enabled = False


async def test_a_slot_of_a_company_being_deleted_waits_for_the_deletion(routines):
    """The pass takes the companies' locks before their routines: a deletion under way is
    waited for (then its routines are gone), never met half-way."""
    await every_minute(routines, 2)
    routines.clock.set(2026, 3, 1, 0, 0, 1)
    deleting = asyncio.create_task(
        routines.container.companies().delete(LOCAL_OPERATOR, routines.world.company_id)
    )
    done = await routines.tick()
    await deleting
    assert len(done.executions) in (0, 2)  # before the deletion, or nothing left after it
    assert await routines.issues() == 0


async def test_the_pass_takes_the_lock_the_company_writers_take(routines):
    """The key PostgreSQL computes for a company's lock is the one the API's writers use."""
    ids = [uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1), *(uuid.uuid4() for _ in range(20))]
    async with routines.container.sessions()() as session:
        for company_id in ids:
            computed = await session.scalar(select(company_lock_key(literal(company_id, Uuid))))
            assert computed == _lock_keys(company_id)["key"], company_id
