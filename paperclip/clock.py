"""The time routines, heartbeats and budget months read: the system's, or in tests a faster one.

They read time only through a clock handed to them, so a test
can move simulated hours without sleeping: in memory it passes its own callable;
across processes every replica is given the same ``PAPERCLIP_TEST_CLOCK``
(``<start>@<anchor>x<speed>``: the simulated instant ``start`` at the real Unix
time ``anchor``, running ``speed`` times faster), so they agree on the time.
Nothing else reads it: leases, retention and timestamps keep the real time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """Now, as an aware UTC datetime."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ScaledClock:
    """Simulated time: ``start`` at the real Unix time ``anchor``, ``speed`` times faster."""

    start: datetime
    anchor: float
    speed: float = 1.0

    def __call__(self) -> datetime:
        return self.start + timedelta(seconds=(time.time() - self.anchor) * self.speed)


def parse_test_clock(spec: str) -> ScaledClock:
    """``2026-03-01T00:00:00+00:00@1764000000.5x600`` as a :class:`ScaledClock`."""
    start, _, rest = spec.strip().partition("@")
    anchor, _, speed = rest.partition("x")
    try:
        begin = datetime.fromisoformat(start)
        clock = ScaledClock(
            begin if begin.tzinfo else begin.replace(tzinfo=UTC), float(anchor), float(speed or 1)
        )
    except ValueError as exc:
        raise ValueError(f"not <ISO start>@<unix anchor>x<speed>: {spec!r}") from exc
    if not 0 < clock.speed <= 100_000:
        raise ValueError(f"speed must be above 0 and at most 100000: {spec!r}")
    return clock


def speed_of(clock: Clock) -> float:
    """How many simulated seconds pass in one real second (1 for the system's clock)."""
    return float(getattr(clock, "speed", 1.0))
