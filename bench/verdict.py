"""What a benchmark's measurement is worth: first whether every sample is plausible, then its targets.

A benchmark pairs what it measures by identity (the issue, run or call it
made, never the order things arrive in), checks its samples with
``sample_problems`` and ends with a ``Verdict``, whose exit code says how it went:

- 0: the measurement is valid and every target is met (or it has none);
- 1 (``MISSED``): valid, and a target is missed;
- 2 (``INVALID``): a sample is missing, not positive, duplicated, unasked for
  or paired with something it did not measure: its figures say nothing;
- 3 (``UNAVAILABLE``): it cannot run on this machine.

An invalid measurement wins over a missed target: a ratio made of shifted
samples misses or meets its target by accident.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

OK, MISSED, INVALID, UNAVAILABLE = 0, 1, 2, 3
SHOWN = 5
"""Bad samples named per problem (then a count of the rest)."""


class Invalid(Exception):
    """A measurement that cannot go on, and why (the problems a ``Verdict`` reports)."""

    def __init__(self, *problems: str) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def names(items: Iterable[object]) -> str:
    """Up to ``SHOWN`` of ``items``, then how many more."""
    listed = [str(item) for item in items]
    shown = ", ".join(listed[:SHOWN])
    return shown + (f" and {len(listed) - SHOWN} more" if len(listed) > SHOWN else "")


def sample_problems(
    what: str,
    samples: Mapping[Hashable, float | None],
    expected: Collection[Hashable],
    *,
    count: int | None = None,
) -> list[str]:
    """What is wrong with ``samples`` (by identity) against the ``expected`` identities.

    Every expected identity has a sample, finite and above zero; no sample is
    for an identity nobody asked for; and, with ``count``, as many were asked
    as the benchmark was told to take. ``None`` is a sample that never came.
    """
    problems = []
    asked = list(expected)
    if count is not None and len(asked) != count:
        problems.append(f"{what}: {len(asked)} samples asked for, {count} wanted")
    twice = [key for key, n in Counter(asked).items() if n > 1]
    if twice:
        problems.append(f"{what}: asked for twice: {names(twice)}")
    wanted = set(asked)
    missing = [key for key in asked if samples.get(key) is None]
    if missing:
        problems.append(f"{what}: {len(missing)} of {len(asked)} samples missing: {names(missing)}")
    unasked = [key for key in samples if key not in wanted]
    if unasked:
        problems.append(f"{what}: {len(unasked)} samples nobody asked for: {names(unasked)}")
    implausible = [
        f"{key} = {value:.6g}"
        for key, value in samples.items()
        if value is not None and not (math.isfinite(value) and value > 0)
    ]
    if implausible:
        problems.append(f"{what}: {len(implausible)} samples not above zero: {names(implausible)}")
    return problems


def value_problems(what: str, values: Sequence[float], count: int | None = None) -> list[str]:
    """``sample_problems`` for samples without an identity of their own (CPU times, passes,
    rates): numbered in order; without ``count``, at least one is wanted."""
    if count is None and not values:
        return [f"{what}: no sample"]
    return sample_problems(what, dict(enumerate(values)), range(len(values)), count=count)


def repeated(what: str, identities: Iterable[Hashable]) -> list[str]:
    """A problem when an identity that must be unique (a run id, a call) comes twice."""
    twice = [key for key, n in Counter(identities).items() if n > 1]
    return [f"{what}: more than once: {names(twice)}"] if twice else []


def median(values: Sequence[float]) -> float:
    """The median, or NaN for no value (an invalid measurement still prints its figures)."""
    return statistics.median(values) if values else math.nan


def ratio_of(over: float, under: float) -> float:
    """``over / under``, or NaN when either is not a number (or ``under`` is 0)."""
    if not (math.isfinite(over) and math.isfinite(under)) or under == 0:
        return math.nan
    return over / under


@dataclass(frozen=True)
class Target:
    """One figure a benchmark reports: against its baseline, and its target if it has one."""

    name: str
    figure: str
    baseline: str = ""
    ratio: float | None = None
    target: str = ""
    met: bool | None = None
    """None: reported, no target."""


@dataclass
class Verdict:
    """A benchmark's figures against its targets, and whether the measurement is valid."""

    bench: str
    rows: list[Target] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unavailable: str | None = None

    @property
    def status(self) -> str:
        if self.unavailable is not None:
            return "unavailable"
        if self.problems:
            return "invalid"
        return "fail" if any(row.met is False for row in self.rows) else "pass"

    @property
    def exit_code(self) -> int:
        return {"unavailable": UNAVAILABLE, "invalid": INVALID, "fail": MISSED}.get(self.status, OK)

    def as_json(self) -> dict[str, Any]:
        rows = []
        for row in self.rows:
            item = asdict(row)
            if item["ratio"] is not None and not math.isfinite(item["ratio"]):
                item["ratio"] = None
            rows.append(item)
        return {
            "bench": self.bench,
            "status": self.status,
            "rows": rows,
            "problems": self.problems,
            "unavailable": self.unavailable,
        }

    def announce(self) -> None:
        """Say on stderr what is wrong, in words: each problem, each target missed."""
        if self.unavailable is not None:
            print(f"{self.bench}: cannot run here: {self.unavailable}", file=sys.stderr)
        for problem in self.problems:
            print(f"{self.bench}: invalid measurement: {problem}", file=sys.stderr)
        if self.problems:
            print(f"{self.bench}: its figures say nothing (exit {INVALID})", file=sys.stderr)
            return
        for row in self.rows:
            if row.met is False:
                print(
                    f"{self.bench}: target missed: {row.name} {row.figure} (target {row.target})",
                    file=sys.stderr,
                )
