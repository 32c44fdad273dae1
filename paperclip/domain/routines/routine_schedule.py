"""A routine's cron schedule: its slots in its time zone, and what a pass fires after downtime.

Pure: no database, no clock (the caller passes ``now``). Slots are aware UTC
datetimes. The five cron fields are read by croniter in the routine's time
zone, so ``0 9 * * *`` in Europe/Paris is 09:00 there in winter and in
summer. Across a DST change (the rules of ``cron(8)``): a wall time that does
not exist (skipped by spring forward) runs right after the change, once; a
wall time that happens twice (fall back) runs once, at its first occurrence,
unless the schedule's hour field is ``*`` (every hour), whose slots follow
elapsed time and run in both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from itertools import islice
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from paperclip.errors import InvalidInputError
from paperclip.models import CatchUp

SCAN_LIMIT = 1_000
"""Late slots counted past the ones a policy runs; more are reported as this many."""


def check_cron(expression: str, field: str = "cron") -> str:
    """The expression, its fields joined by one space; ``422 invalid_cron`` naming ``field``."""
    fields = expression.split()
    if len(fields) != 5 or not croniter.is_valid(" ".join(fields)) or not _comes(fields):
        raise InvalidInputError(
            f"{expression!r} is not a cron schedule of five fields (minute hour day-of-month "
            "month day-of-week), e.g. '0 9 * * 1-5'",
            code="invalid_cron",
            field=field,
        )
    return " ".join(fields)


def _comes(fields: list[str]) -> bool:
    """Does the schedule ever come (``0 0 30 2 *`` never does)?"""
    try:
        croniter(" ".join(fields), datetime(2000, 1, 1, tzinfo=UTC)).get_next(datetime)
    except (CroniterBadDateError, ValueError, KeyError):
        return False
    return True


def check_timezone(name: str, field: str = "timezone") -> ZoneInfo:
    """The IANA time zone called ``name``; ``422 unknown_timezone`` naming ``field``."""
    try:
        if name and len(name) <= 64 and not name.startswith(("/", ".")):
            return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        pass
    raise InvalidInputError(
        f"{name!r} is not a known IANA time zone (e.g. 'UTC', 'Europe/Paris', 'America/New_York')",
        code="unknown_timezone",
        field=field,
    )


@lru_cache(maxsize=4096)
def _checked(cron: str, timezone: str) -> Schedule:
    # A scheduler pass reads every due routine's schedule: checking the same expression
    # again took a third of a pass's time. Only valid ones are kept (a refusal raises).
    return Schedule(check_cron(cron), check_timezone(timezone))


@dataclass(frozen=True, slots=True)
class SlotPlan:
    """What one scheduler pass does with a routine's due slots."""

    fire: list[datetime]
    """The slots that run now, oldest first."""
    missed: int
    """Late slots the catch-up policy leaves out (at most ``SCAN_LIMIT`` counted past the cap)."""
    next_slot_at: datetime
    """The first slot after ``now``: where the next pass starts."""


@dataclass(frozen=True, slots=True)
class Schedule:
    cron: str
    zone: ZoneInfo

    @classmethod
    def of(cls, cron: str, timezone: str) -> Schedule:
        """The schedule of a cron expression in a time zone, each checked (``422`` codes)."""
        return _checked(cron, timezone)

    @property
    def every_hour(self) -> bool:
        return self.cron.split()[1] == "*"

    def _repeat(self, slot: datetime) -> bool:
        """The second occurrence of a wall time that falls back (cron(8) runs it once)."""
        wall = slot.astimezone(self.zone).replace(tzinfo=None)
        first = wall.replace(tzinfo=self.zone, fold=0).astimezone(UTC)
        return not self.every_hour and first != slot.astimezone(UTC)

    def _walk(self, start: datetime) -> croniter:
        return croniter(self.cron, start.astimezone(self.zone))

    def after(self, instant: datetime, count: int = 1) -> list[datetime]:
        """The next ``count`` slots strictly after ``instant``, in UTC."""
        return list(islice(self._slots_after(instant), count))

    def _slots_after(self, instant: datetime) -> Iterator[datetime]:
        walk = self._walk(instant)
        while True:
            slot = walk.get_next(datetime).astimezone(UTC)
            if slot > instant and not self._repeat(slot):
                yield slot

    def next_after(self, instant: datetime) -> datetime:
        return self.after(instant)[0]

    def plan(
        self,
        since: datetime,
        now: datetime,
        *,
        grace: timedelta,
        catch_up: str,
        cap: int,
    ) -> SlotPlan:
        """The slots due in ``[since, now]``: on time (within ``grace`` of ``now``) they run;
        late ones run as ``catch_up`` says: none (``skip_missed``), the latest
        (``run_latest_once``), or the latest ``cap`` (``run_all``)."""
        if since >= now - grace:
            return self._on_time(since, now)
        on_time: list[datetime] = []
        late: list[datetime] = []  # newest first
        keep = {CatchUp.SKIP_MISSED: 0, CatchUp.RUN_LATEST_ONCE: 1}.get(CatchUp(catch_up), cap)
        walk = self._walk(now + timedelta(seconds=1))
        counted = 0
        while counted <= keep + SCAN_LIMIT:
            slot = walk.get_prev(datetime).astimezone(UTC)
            if slot < since:
                break
            if slot > now or self._repeat(slot):
                continue
            if slot >= now - grace:
                on_time.append(slot)
            else:
                late.append(slot)
                counted += 1
        fire = sorted(late[:keep] + on_time)
        return SlotPlan(fire, max(0, len(late) - keep), self.next_after(now))

    def _on_time(self, since: datetime, now: datetime) -> SlotPlan:
        """``plan`` when nothing can be late (``since`` is within the grace): every slot from
        ``since`` to ``now`` runs. Walked forward from ``since``, as ``after`` walks: a pass
        usually finds one slot, and this is half the work of walking back from ``now``."""
        fire = []
        for slot in self._slots_after(since - timedelta(seconds=1)):
            if slot > now:
                return SlotPlan(fire, 0, slot)
            if slot >= since:
                fire.append(slot)
        raise AssertionError("unreachable: a cron schedule has a next slot")
