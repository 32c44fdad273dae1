"""Retention over a million event rows: how fast it removes them, how short each batch is,
and a recovery pass costing what it cost before (``bench/recovery_pass.py``'s ratio).

Two databases on one PostgreSQL, as in ``bench/recovery_pass.py``: a small
past (10^3 rows) and a large one (``--history`` rows, by default enough for
10^6 ``run_events`` rows, with their tool calls and runs, ended 30 days
ago). First the recovery ratio is measured (median reconciler pass, large /
small). Then the real retention keeper (``paperclip.engine.logs.retention``, a
7-day retention) removes the large past in batches, timed, while a probe
times a one-row write every 10 ms on another connection: what the engine
would feel. Then the large side is vacuumed (as autovacuum would, after
such a deletion) and the ratio is measured again.

Usage: python bench/retention.py [--history N] [--rounds N] [--pending N] [--json]
Uses PAPERCLIP_DATABASE_URL when set, else an embedded PostgreSQL in a temp dir.
Exits 1 when the ratio after is over the recovery bench's target (1.5) or over
the ratio before by more than a third, or an event row is left; 2 when the
measurement is invalid (a round not settling every pending run, no pass or
probe write timed, the sweep's count of removed events not what the table lost).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recovery_pass import (
    SMALL_HISTORY,
    TARGET,
    Side,
    create_database,
    drain_side_by_side,
    drop_database,
    server_url,
    with_database,
)
from support import connect
from verdict import Invalid, Target, Verdict, median, ratio_of, value_problems

from paperclip.db import migrate
from paperclip.engine.logs.retention import RetentionKeeper
from tests.support.recovery_load import EVENTS_PER_RUN, ROWS_PER_HISTORY_RUN

DEFAULT_EVENTS = 1_000_000


async def ratio(
    sides: tuple[Side, Side], args: argparse.Namespace, when: str, problems: list[str]
) -> float:
    """The median pass on the large past over the small one's (their passes' problems added
    to ``problems``)."""
    for side in sides:
        side.passes = []
    for _ in range(args.rounds):
        for side in sides:
            await side.seed(args.pending)
        await drain_side_by_side(sides, args.pending)
    for side in sides:
        problems += value_problems(f"passes {when}, {side.name} past", side.passes)
    return ratio_of(median(sides[1].passes), median(sides[0].passes))


async def probe(url: str, stop: asyncio.Event, latencies: list[float]) -> None:
    """A one-row write every 10 ms, committed on its own: the engine's kind of statement."""
    conn = await connect(url)
    try:
        await conn.execute("CREATE TEMP TABLE probe (n int)")
        while not stop.is_set():
            started = time.perf_counter()
            await conn.execute("INSERT INTO probe VALUES (1)")
            latencies.append(time.perf_counter() - started)
            await asyncio.sleep(0.01)
    finally:
        await conn.close()


async def bench(url: str, args: argparse.Namespace) -> dict[str, object]:
    names = {size: f"paperclip_bench_retention_{size}_{uuid.uuid4().hex[:6]}" for size in "sl"}
    for name in names.values():
        await create_database(url, name)
    try:
        for name in names.values():
            await asyncio.to_thread(migrate.upgrade, with_database(url, name))
        small = Side("small", with_database(url, names["s"]), SMALL_HISTORY)
        large = Side("large", with_database(url, names["l"]), args.history)
        sides = (small, large)
        for side in sides:
            await side.seed(0)
        conn = await connect(large.url)
        try:
            events = await conn.fetchval("SELECT count(*) FROM run_events")
        finally:
            await conn.close()
        for side in sides:
            await side.open()
        problems: list[str] = []
        try:
            before = await ratio(sides, args, "before", problems)
            keeper = RetentionKeeper(
                large.container.sessions(),
                retention_days={"run_events": 7, "tool_calls": 7, "activity_log": 7},
                pass_seconds=60,
                batch_rows=args.batch,
            )
            stop, latencies = asyncio.Event(), []
            probing = asyncio.create_task(probe(large.url, stop, latencies))
            started = time.perf_counter()
            report = await keeper.sweep()
            elapsed = time.perf_counter() - started
            stop.set()
            await probing
            conn = await connect(large.url)
            try:
                left = await conn.fetchval("SELECT count(*) FROM run_events")
                await conn.execute("VACUUM ANALYZE")
                await conn.execute("CHECKPOINT")
            finally:
                await conn.close()
            after = await ratio(sides, args, "after", problems)
        finally:
            for side in sides:
                await side.close()
    finally:
        for name in names.values():
            await drop_database(url, name)
    deleted = sum(report.deleted.values())
    problems += value_problems("probe writes", latencies)
    if report.deleted.get("run_events", 0) != events - left:
        problems.append(
            f"the sweep says it removed {report.deleted.get('run_events', 0):,} event rows,"
            f" the table lost {events - left:,}"
        )
    if deleted == 0 or elapsed <= 0:
        problems.append(f"nothing measured: {deleted} rows removed in {elapsed:.3f} s")
    latencies.sort()
    return {
        "run_events": events,
        "run_events_left": left,
        "rows_deleted": deleted,
        "seconds": round(elapsed, 1),
        "rows_per_second": round(deleted / elapsed) if elapsed > 0 else None,
        "batches": report.batches,
        "longest_batch_ms": round(report.longest_batch_seconds * 1000, 1),
        "probe_writes": len(latencies),
        "probe_p50_ms": round(latencies[len(latencies) // 2] * 1000, 2) if latencies else None,
        "probe_p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2)
        if latencies
        else None,
        "recovery_ratio_before": round(before, 3),
        "recovery_ratio_after": round(after, 3),
        "target": TARGET,
        "problems": problems,
    }


def judge(result: dict[str, Any], problems: list[str]) -> Verdict:
    """The ratio after against the target and against the ratio before; every event gone."""
    before = float(result.get("recovery_ratio_before", math.nan))
    after = float(result.get("recovery_ratio_after", math.nan))
    left = result.get("run_events_left")
    return Verdict(
        "retention",
        [
            Target(
                "recovery pass after the sweep",
                f"{after:.2f}x",
                f"{before:.2f}x before",
                ratio_of(after, before),
                f"at most {TARGET:g}x, and 4/3 of before",
                after <= TARGET and after <= max(before, 1.0) * 4 / 3,
            ),
            Target(
                "event rows left past their retention",
                f"{left}",
                f"{result.get('run_events', '?')} before",
                None,
                "none",
                left == 0,
            ),
        ],
        problems,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--history",
        type=int,
        default=DEFAULT_EVENTS // EVENTS_PER_RUN * ROWS_PER_HISTORY_RUN,
        help="rows of the large past (runs, events and calls; default: 10^6 events)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pending", type=int, default=500, help="lost runs per round")
    parser.add_argument("--batch", type=int, default=1000, help="rows per retention batch")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="paperclip-bench-", dir="/var/tmp") as tmp:
        os.chmod(tmp, 0o755)
        url, server = server_url(tmp)
        try:
            result = asyncio.run(bench(url, args))
            problems = result.pop("problems")
        except Invalid as exc:
            result, problems = {}, exc.problems
        finally:
            if server is not None:
                server.stop()
    verdict = judge(result, problems)
    if args.json:
        print(json.dumps({**result, "verdict": verdict.as_json()}))
    elif result:
        print(
            f"removed {result['rows_deleted']:,} rows ({result['run_events']:,} events) in "
            f"{result['seconds']} s, {result['rows_per_second']:,} rows/s, "
            f"{result['batches']} batches, the longest {result['longest_batch_ms']} ms; "
            f"a write meanwhile: p50 {result['probe_p50_ms']} ms, p99 {result['probe_p99_ms']} ms"
        )
        print(
            f"recovery pass ratio before {result['recovery_ratio_before']:.2f}x, "
            f"after {result['recovery_ratio_after']:.2f}x (target at most {TARGET}x)"
        )
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    sys.exit(main())
