"""A routine's schedule: cron read in its time zone, DST by cron(8)'s rules, catch-up plans."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from paperclip.domain.routines.routine_schedule import Schedule, check_cron, check_timezone
from paperclip.domain.routines.routine_templates import check_template, fill
from paperclip.errors import InvalidInputError

NY = "America/New_York"
GRACE = timedelta(seconds=60)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_nine_in_the_morning_stays_nine_across_the_spring_change():
    slots = Schedule.of("0 9 * * *", NY).after(utc(2026, 3, 6, 15), 4)
    # 14:00 UTC in EST, 13:00 UTC from the Sunday of the change (EDT).
    assert slots == [
        utc(2026, 3, 7, 14),
        utc(2026, 3, 8, 13),
        utc(2026, 3, 9, 13),
        utc(2026, 3, 10, 13),
    ]


def test_a_wall_time_skipped_by_spring_forward_runs_once_right_after_the_change():
    slots = Schedule.of("30 2 * * *", NY).after(utc(2026, 3, 7, 0), 3)
    # 02:30 does not exist on 8 March in New York: it runs at 03:00 EDT (07:00 UTC), once.
    assert slots == [utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7), utc(2026, 3, 9, 6, 30)]


def test_a_wall_time_that_happens_twice_in_the_fall_runs_once():
    slots = Schedule.of("30 1 * * *", NY).after(utc(2026, 10, 31, 12), 3)
    # 01:30 comes twice on 1 November (EDT, then EST): only the first runs.
    assert slots == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30), utc(2026, 11, 3, 6, 30)]


def test_every_hour_follows_elapsed_time_through_the_repeated_hour():
    slots = Schedule.of("0 * * * *", NY).after(utc(2026, 11, 1, 4, 30), 4)
    # 01:00 EDT, 01:00 EST, 02:00 EST: one slot per real hour.
    assert slots == [
        utc(2026, 11, 1, 5),
        utc(2026, 11, 1, 6),
        utc(2026, 11, 1, 7),
        utc(2026, 11, 1, 8),
    ]


def test_the_plan_across_the_fall_change_fires_each_slot_once():
    schedule = Schedule.of("30 1 * * *", NY)
    plan = schedule.plan(
        utc(2026, 11, 1, 5, 30),
        utc(2026, 11, 1, 6, 30),
        grace=timedelta(hours=2),
        catch_up="skip_missed",
        cap=10,
    )
    assert plan.fire == [utc(2026, 11, 1, 5, 30)] and plan.missed == 0
    assert plan.next_slot_at == utc(2026, 11, 2, 6, 30)


@pytest.mark.parametrize(
    ("catch_up", "cap", "fired", "missed"),
    [
        ("skip_missed", 10, [], 3),
        ("run_latest_once", 10, [3], 2),
        ("run_all", 10, [1, 2, 3], 0),
        ("run_all", 2, [2, 3], 1),
    ],
)
def test_three_hours_down_under_each_catch_up_policy(catch_up, cap, fired, missed):
    """Hourly; the scheduler last decided 00:00 and comes back at 03:30: 01:00, 02:00 and
    03:00 are late."""
    plan = Schedule.of("0 * * * *", "UTC").plan(
        utc(2026, 3, 1, 1), utc(2026, 3, 1, 3, 30), grace=GRACE, catch_up=catch_up, cap=cap
    )
    assert plan.fire == [utc(2026, 3, 1, hour) for hour in fired]
    assert plan.missed == missed
    assert plan.next_slot_at == utc(2026, 3, 1, 4)


def test_a_slot_within_the_grace_is_on_time_under_every_policy():
    plan = Schedule.of("* * * * *", "UTC").plan(
        utc(2026, 3, 1, 0, 1), utc(2026, 3, 1, 0, 1, 30), grace=GRACE, catch_up="skip_missed", cap=1
    )
    assert plan.fire == [utc(2026, 3, 1, 0, 1)] and plan.missed == 0


def test_a_year_down_counts_a_bounded_number_of_missed_slots():
    plan = Schedule.of("* * * * *", "UTC").plan(
        utc(2025, 3, 1), utc(2026, 3, 1, 0, 0, 30), grace=GRACE, catch_up="run_all", cap=5
    )
    assert len(plan.fire) == 6  # five late, the one on time
    assert 1_000 <= plan.missed <= 1_010


@pytest.mark.parametrize("cron", ["*/20 * * * *", "0 * * * *", "30 1 * * *", "30 2 * * *"])
@pytest.mark.parametrize("day", [utc(2026, 3, 8), utc(2026, 11, 1)])
def test_a_plan_on_time_walks_forward_to_the_slots_the_catch_up_walk_finds(cron, day):
    """A pass finding nothing late plans forward from its cursor (half the work); across both
    changes of the clock in New York it fires what walking back from now fires."""
    schedule = Schedule.of(cron, NY)
    for start in range(0, 12 * 60, 25):  # cursors through the day's first twelve hours
        since = schedule.next_after(day + timedelta(minutes=start))
        now = since + timedelta(hours=2, minutes=10)
        forward = schedule.plan(since, now, grace=timedelta(hours=3), catch_up="skip_missed", cap=0)
        back = schedule.plan(since, now, grace=timedelta(0), catch_up="run_all", cap=1000)
        assert (forward.fire, forward.missed, forward.next_slot_at) == (
            back.fire,
            0,
            back.next_slot_at,
        ), (cron, since, now)


@pytest.mark.parametrize(
    "cron", ["", "* * * *", "* * * * * *", "61 * * * *", "@daily", "0 9 * * funday", "0 0 30 2 *"]
)
def test_a_cron_not_of_five_valid_fields_is_refused_naming_the_field(cron):
    with pytest.raises(InvalidInputError) as refused:
        check_cron(cron)
    assert refused.value.code == "invalid_cron"
    assert refused.value.details[0]["field"] == "cron"


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../etc/passwd", "", "/usr/share/zoneinfo/UTC"])
def test_an_unknown_time_zone_is_refused_naming_the_field(zone):
    with pytest.raises(InvalidInputError) as refused:
        check_timezone(zone)
    assert refused.value.code == "unknown_timezone"
    assert refused.value.details[0]["field"] == "timezone"


def test_placeholders_are_filled_in_the_routine_time_zone_and_unknown_ones_refused():
    text = "Report {{date}} {{time}} ({{weekday}}) by {{routine}} on {{trigger}}"
    filled = fill(
        text, slot_at=utc(2026, 3, 9, 8), zone="Europe/Paris", routine="r", trigger="cron"
    )
    assert filled == "Report 2026-03-09 09:00 (Monday) by r on cron"
    with pytest.raises(InvalidInputError) as refused:
        check_template("Report {{dte}}", "title")
    assert refused.value.code == "unknown_placeholder" and "{{dte}}" in refused.value.message
