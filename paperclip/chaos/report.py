"""The figures of a chaos run: faults by kind, failpoints, runs by outcome, recovery times."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

ChaosRun = Any
"""A ``paperclip.chaos.harness.ChaosRun`` (not imported: the harness imports this module)."""


def counts(run: ChaosRun, active: str) -> tuple[dict[str, int], dict[str, int]]:
    """Faults by kind, and the workload's items by outcome (``active``: assigned, unsettled)."""
    by_kind: dict[str, int] = {}
    for fault in run.faults:
        by_kind[fault.kind] = by_kind.get(fault.kind, 0) + 1
    outcomes: dict[str, int] = {}
    for item in run.workload.items:
        key = item.outcome or (active if item.assigned else "never_assigned")
        outcomes[key] = outcomes.get(key, 0) + 1
    return by_kind, outcomes


def failpoints(run: ChaosRun) -> dict[str, dict[str, int]]:
    return {"fired": run.fired, "armed": run.armed, "timed_out": run.stale}


def progress(run: ChaosRun, seconds: float) -> dict[str, Any]:
    """What a long run reached so far (``--progress``), rewritten while it goes on."""
    by_kind, outcomes = counts(run, "active")
    return {
        "seconds": round(seconds, 1),
        "faults": {"total": len(run.faults), "by_kind": by_kind},
        "failpoints": failpoints(run),
        "runs": outcomes,
        "steered": sum(len(item.steered) for item in run.workload.items),
        "violations_so_far": [{"kind": v.kind, "detail": v.detail} for v in run.violations],
        "http_5xx": run.http_5xx[:20] + run.workload.server_errors[:20],
        "unplanned_exits": len(run.unplanned_exits),
    }


def result(run: ChaosRun, seconds: float) -> dict[str, Any]:
    """The whole result (``--json``)."""
    o = run.options
    by_kind, outcomes = counts(run, "unfinished")
    recovery = {}
    for kind in sorted(by_kind):
        of_kind = [f for f in run.faults if f.kind == kind]
        recovery[kind] = {
            "to_health": spread([f.to_health for f in of_kind]),
            "to_next_event": spread([f.to_next_event for f in of_kind]),
        }
    return {
        "seed": o.seed,
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(o).items()},
        "seconds": round(seconds, 1),
        "runs": {"total": o.runs, **outcomes},
        "faults": {"total": len(run.faults), "by_kind": by_kind},
        "failpoints": failpoints(run),
        "steered": sum(len(item.steered) for item in run.workload.items),
        "recovery_seconds": recovery,
        "unplanned_exits": run.unplanned_exits[:50],
        "replayed_lost_turns": {
            "count": len(run.replayed_lost_turns),
            "turns": run.replayed_lost_turns[:50],
        },
        "violations": [{"kind": v.kind, "detail": v.detail} for v in run.violations],
        "ok": not run.violations,
    }


def spread(values: list[float | None]) -> dict[str, float | int | None]:
    """How many were measured, their median and p99."""
    known = sorted(v for v in values if v is not None)
    if not known:
        return {"n": 0, "median": None, "p99": None}
    p99 = known[min(len(known) - 1, round(0.99 * (len(known) - 1)))]
    return {"n": len(known), "median": round(statistics.median(known), 2), "p99": round(p99, 2)}
