"""Journaled tool round trips per second, as a ratio of raw INSERT+COMMIT per second.

Both are measured in the same run against the same PostgreSQL, so the ratio
holds on a noisy, shared machine where absolute rates do not.

- baseline: as many connections as there are runs, each doing single-row
  ``INSERT`` + ``COMMIT`` in a loop, before and after the measurement (their
  mean; and, reported beside it, one connection);
- journaled: a real control plane (``paperclip serve --no-runner``) and a
  scripted runner peer speaking the runner protocol over its WebSocket; each
  round trip is one ``report_progress`` tool call (a self-contained write
  tool: its admission, effect, receipt and result in one fenced statement,
  its reply sent unsequenced after it commits, as to the runner) from 1 and
  from 8 concurrent runs.

Usage: python bench/tool_roundtrip.py [--calls N] [--json]
Uses PAPERCLIP_DATABASE_URL when set, else an embedded PostgreSQL in a temp dir.
Exits 1 when a ratio (against as many connections as runs) is under its
target: 0.3 at 8 concurrent runs, 0.3 at one; 2 when the measurement is
invalid (a call unanswered or answered in error, a baseline not above zero).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import RunnerPeer, StartTurns, connect, control_plane, run
from verdict import Target, Verdict, ratio_of, repeated, sample_problems, value_problems

TARGET = 0.3
"""At 8 runs, against the same concurrency (0.4 was against one connection, which flatters it)."""
TARGET_1 = 0.3
"""At one run, against one connection: one commit per call, as the baseline's, plus the hops
between three processes (the peer, the control plane, PostgreSQL)."""


async def baseline_inserts(url: str, seconds: float, connections: int = 1) -> float:
    """INSERT+COMMIT/s of ``connections`` connections at once, each committing one row at a time.

    The journaled side runs as many runs at once: compared with one connection
    only, it would be credited with the commits PostgreSQL overlaps across
    connections (about 4x at 8 on this machine).
    """
    setup = await connect(url)
    await setup.execute(
        "CREATE TABLE IF NOT EXISTS bench_baseline (id bigserial PRIMARY KEY, v text)"
    )
    conns = [await connect(url) for _ in range(connections)]
    started = time.perf_counter()

    async def one(conn) -> int:
        n = 0
        while time.perf_counter() - started < seconds:
            async with conn.transaction():
                await conn.execute("INSERT INTO bench_baseline (v) VALUES ($1)", "x")
            n += 1
        return n

    try:
        counts = await asyncio.gather(*(one(conn) for conn in conns))
        return sum(counts) / (time.perf_counter() - started)
    finally:
        for conn in conns:
            await conn.close()
        await setup.execute("DROP TABLE IF EXISTS bench_baseline")
        await setup.close()


async def vacuum(url: str) -> None:
    """What pgbench does before a run: no dead rows from earlier phases, fresh planner statistics.

    A short benchmark otherwise runs entirely before autovacuum's first pass, on
    plans made for empty tables, which no long-lived server sees.
    """
    conn = await connect(url)
    try:
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def journaled_round_trips(
    peer: RunnerPeer, runs: list[uuid.UUID], calls: int
) -> tuple[float, list[str]]:
    """Round trips per second of ``calls`` calls from each run at once, and what makes the
    measurement invalid.

    Each call is its own sample, paired with its result by call id (``RunnerPeer.call``):
    every call must be answered, without error, for the run that made it.
    """
    samples: dict[str, float | None] = {}
    problems: list[str] = []

    async def one_run(index: int, run_id: uuid.UUID) -> None:
        for i in range(calls):
            key = f"run {index} call {i}"
            sent = time.perf_counter()
            result = await peer.call(run_id, "report_progress", {"summary": f"step {i}"})
            if result is None:
                return  # no answer: this call and the run's next ones are missing
            samples[key] = time.perf_counter() - sent
            if result.is_error or result.run_id != run_id:
                samples[key] = None
                problems.append(f"{key}: answered {result.content!r} for run {result.run_id}")

    started = time.perf_counter()
    await asyncio.gather(*(one_run(index, r) for index, r in enumerate(runs)))
    rate = len(runs) * calls / (time.perf_counter() - started)
    expected = [f"run {index} call {i}" for index in range(len(runs)) for i in range(calls)]
    problems += sample_problems(f"round trips at {len(runs)} runs", samples, expected)
    return rate, problems


def setup(base: str, runs: int) -> list[uuid.UUID]:
    """``runs`` issues assigned to a new agent (each wakes it: a run); the issues' ids."""
    with httpx.Client(base_url=f"{base}/api", timeout=30) as api:
        company = api.post("/companies", json={"name": f"Bench {uuid.uuid4().hex[:6]}"}).json()
        agent = api.post(
            f"/companies/{company['id']}/agents", json={"name": "bench", "provider": "codex"}
        ).json()
        issues = []
        for i in range(runs):
            made = api.post(
                f"/companies/{company['id']}/issues",
                json={"title": f"bench {i}", "assignee_agent_id": agent["id"]},
            )
            issues.append(uuid.UUID(made.raise_for_status().json()["id"]))
    return issues


async def measure(
    peer: RunnerPeer, base: str, database_url: str, runs: int, calls: int
) -> tuple[float, list[str]]:
    """The rate of ``runs`` new runs (each the run of an issue made here, found by its issue,
    never by arrival: an earlier phase's run cannot stand in), and its problems."""
    turns = StartTurns()
    peer.on_start = turns
    await peer.open()
    try:
        issues = await asyncio.to_thread(setup, base, runs)
        run_ids = []
        for issue_id in issues:
            arrival = await turns.of(issue_id, 60)
            if arrival is None:
                return math.nan, [f"issue {issue_id}: no start_turn of its run came"]
            run_ids.append(arrival.start.run_id)
        problems = repeated("run ids of the issues", run_ids)
        await journaled_round_trips(peer, run_ids, max(3, calls // 10))  # warm-up
        await vacuum(database_url)
        rate, measured = await journaled_round_trips(peer, run_ids, calls)
        return rate, problems + measured
    finally:
        await peer.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=150, help="round trips per run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    problems: list[str] = []
    with control_plane() as cp:
        # One runner process for both phases: the second connection resumes where the first
        # stopped (received_seq) and still hosts the first phase's run.
        peer = RunnerPeer(cp.url, cp.runner_credential())
        figures: dict[str, float] = {}
        for concurrency in (1, 8):
            one = run(baseline_inserts(cp.database_url, 3.0))
            # The baseline on both sides of the measurement: a disk whose flushes
            # drift from minute to minute moves a baseline taken on one side only.
            before = run(baseline_inserts(cp.database_url, 3.0, concurrency))
            rate, measured = run(measure(peer, cp.url, cp.database_url, concurrency, args.calls))
            after = run(baseline_inserts(cp.database_url, 3.0, concurrency))
            problems += measured
            problems += value_problems(f"baselines at {concurrency}", [one, before, after], 3)
            same = (before + after) / 2
            figures[f"baseline_inserts_per_s_{concurrency}"] = same
            figures[f"baseline_before_per_s_{concurrency}"] = before
            figures[f"baseline_after_per_s_{concurrency}"] = after
            figures[f"baseline_one_connection_per_s_{concurrency}"] = one
            figures[f"tool_round_trips_per_s_{concurrency}"] = rate
            figures[f"ratio_{concurrency}"] = ratio_of(rate, same)
            figures[f"ratio_{concurrency}_vs_one_connection"] = ratio_of(rate, one)
    verdict = Verdict(
        "tool_roundtrip",
        [
            Target(
                f"journaled round trips, {n} run{'s' if n > 1 else ''}",
                f"{figures[f'tool_round_trips_per_s_{n}']:.1f}/s",
                f"{figures[f'baseline_inserts_per_s_{n}']:.1f} INSERT+COMMIT/s on {n}",
                figures[f"ratio_{n}"],
                f"at least {target:g}",
                figures[f"ratio_{n}"] >= target,
            )
            for n, target in ((8, TARGET), (1, TARGET_1))
        ],
        problems,
    )
    if args.json:
        rounded = {k: round(v, 3) if math.isfinite(v) else None for k, v in figures.items()}
        print(json.dumps({**rounded, "verdict": verdict.as_json()}))
    else:
        for concurrency in (1, 8):
            print(
                f"{concurrency} run(s): {figures[f'tool_round_trips_per_s_{concurrency}']:8.1f} journaled round trips/s"
                f"  vs {figures[f'baseline_inserts_per_s_{concurrency}']:8.1f} raw INSERT+COMMIT/s"
                f" on {concurrency} connection(s): ratio {figures[f'ratio_{concurrency}']:.2f}"
                f" (against one connection, {figures[f'baseline_one_connection_per_s_{concurrency}']:.1f}/s:"
                f" {figures[f'ratio_{concurrency}_vs_one_connection']:.2f})"
            )
        print(f"targets: at 8 runs >= {TARGET}, at 1 run >= {TARGET_1}")
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
