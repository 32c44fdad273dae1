"""Cron routines in simulated hours: slots on time, and each catch-up policy after downtime.

The scheduler reads a fake clock the test moves; nothing sleeps. Concurrency
is ``allow`` so every slot that runs makes its issue (the policies of open
issues are ``test_concurrency.py``'s).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from paperclip.models import WakeRequest


def hours(*values: int) -> list[datetime]:
    return [datetime(2026, 3, 1, h, tzinfo=UTC) for h in values]


async def test_an_hourly_routine_runs_each_slot_once_for_a_simulated_day(routines):
    routine_id = await routines.routine(cron="0 * * * *", concurrency="allow")
    await routines.tick()  # its schedule starts from the scheduler's now: first slot 00:00
    for hour in range(24):
        for minute in (0, 0, 20, 59):  # several passes in each hour, one on the slot twice
            await routines.at(2026, 3, 1, hour, minute, 10)
    done = await routines.executions(routine_id)
    assert [e.slot_at for e in done] == hours(*range(24))
    assert {e.status for e in done} == {"started"} and {e.trigger for e in done} == {"cron"}
    assert len({e.issue_id for e in done}) == 24 == await routines.issues()
    wakes = await routines.wakes(source="routine")
    assert sorted(w.id for w in wakes) == sorted(e.wake_request_id for e in done)
    assert done[9].slot_key == "cron:2026-03-01T09:00:00+00:00"


@pytest.mark.parametrize(
    ("catch_up", "cap", "late_run"),
    [
        ("skip_missed", 10, []),
        ("run_latest_once", 10, [3]),
        ("run_all", 10, [1, 2, 3]),
        ("run_all", 2, [2, 3]),
    ],
)
async def test_three_hours_down_runs_the_documented_slots_each_once(
    routines, catch_up, cap, late_run
):
    """Down from 00:30 to 03:30: 01:00, 02:00 and 03:00 are late when it comes back."""
    routine_id = await routines.routine(
        cron="0 * * * *", concurrency="allow", catch_up=catch_up, catch_up_cap=cap
    )
    await routines.tick()
    await routines.at(2026, 3, 1, 0, 0, 5)
    await routines.at(2026, 3, 1, 0, 30)
    # ... no pass for three hours ...
    back = await routines.at(2026, 3, 1, 3, 30)
    again = await routines.at(2026, 3, 1, 3, 30, 1)  # a second replica's pass: nothing more
    await routines.at(2026, 3, 1, 4, 0, 1)

    done = await routines.executions(routine_id)
    assert [e.slot_at for e in done] == hours(0, *late_run, 4)
    assert [e.slot_at for e in back.executions] == hours(*late_run)
    assert back.missed == 3 - len(late_run) and not again.executions
    assert len({e.slot_key for e in done}) == len(done) == await routines.issues()
    assert await routines.count(WakeRequest, source="routine") == len(done)
    async with routines.container.sessions()() as session:
        from paperclip.models import Routine

        routine = await session.get(Routine, routine_id)
        assert routine.missed_slots == 3 - len(late_run)


async def test_a_disabled_routine_fires_nothing_and_starts_again_from_its_enabling(routines):
    routine_id = await routines.routine(cron="*/10 * * * *", concurrency="allow")
    await routines.tick()
    await routines.at(2026, 3, 1, 0, 0, 5)
    service = routines.container.routines()
    from paperclip.common.actor import LOCAL_OPERATOR

    await service.update(LOCAL_OPERATOR, routines.world.company_id, routine_id, {"enabled": False})
    await routines.at(2026, 3, 1, 2, 0, 5)
    await service.update(LOCAL_OPERATOR, routines.world.company_id, routine_id, {"enabled": True})
    await routines.tick()  # its schedule starts again from now: 02:10 next
    await routines.at(2026, 3, 1, 2, 10, 5)
    done = await routines.executions(routine_id)
    assert [e.slot_at for e in done] == [
        datetime(2026, 3, 1, 0, 0, tzinfo=UTC),
        datetime(2026, 3, 1, 2, 10, tzinfo=UTC),
    ]


async def test_the_issue_is_made_from_the_template_in_the_routine_time_zone(routines):
    routine_id = await routines.routine(
        cron="0 9 * * *",
        timezone="Europe/Paris",
        title="Triage {{date}} {{time}} ({{weekday}})",
        description="Look at yesterday's reports, {{routine}}.",
        priority="high",
    )
    await routines.at(2026, 3, 9, 7, 59)
    await routines.at(2026, 3, 9, 8, 0, 1)  # 09:00 in Paris (UTC+1)
    [execution] = await routines.executions(routine_id)
    async with routines.container.sessions()() as session:
        from paperclip.models import Issue

        issue = await session.get(Issue, execution.issue_id)
    assert issue.title == "Triage 2026-03-09 09:00 (Monday)"
    assert issue.description.startswith("Look at yesterday's reports, routine-")
    assert (issue.priority, issue.assignee_agent_id, issue.status) == (
        "high",
        routines.world.agent_id,
        "todo",
    )
    [wake] = await routines.wakes(source="routine")
    assert wake.issue_id == issue.id and wake.payload["execution_id"] == str(execution.id)
