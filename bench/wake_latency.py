"""Wake-to-run latency: from an assignment's commit to its run's ``start_turn`` at the runner.

Measured against a baseline taken in the same run on the same database: a
bare ``NOTIFY`` round trip (one connection notifies, another that listens
receives it), the floor of any notification-driven wake-up.

- wake: a real control plane (``paperclip serve --no-runner``) and a scripted
  runner peer over its WebSocket. One issue at a time is assigned by a
  transaction of the benchmark's own (the issue's assignee and its queued
  wake, as the API writes them); the clock starts when that ``COMMIT``
  returns and stops when the peer receives the run's ``start_turn``. The peer
  then ends the turn at once so the next wake starts from an idle engine.
- baseline: ``NOTIFY`` from one connection, received by a ``LISTEN`` on another.
- durable baseline (reported, not the target's): the same, from a transaction
  that also inserts a row, so that its ``COMMIT`` is durable (a WAL flush), as
  any claim's must be: the least a wake-up that writes a run can cost.

Usage: python bench/wake_latency.py [--wakes N] [--json]
Uses PAPERCLIP_DATABASE_URL when set, else an embedded PostgreSQL in a temp dir.
Exits 1 when the median ratio is over the target (5x).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import RunnerPeer, connect, control_plane, percentile, run, wire

TARGET = 5.0

ASSIGN = """
WITH issue AS (
    UPDATE issues SET assignee_agent_id = $2, updated_at = now() WHERE id = $1
    RETURNING company_id
)
INSERT INTO wake_requests
    (id, company_id, agent_id, issue_id, source, reason, payload, coalesced_count, status,
     created_at, updated_at)
SELECT $3, company_id, $2, $1, 'assignment', 'assigned', '{}'::jsonb, 0, 'queued', now(), now()
FROM issue
"""


async def notify_round_trips(url: str, count: int, *, durable: bool = False) -> list[float]:
    """Seconds from sending NOTIFY on one connection to its delivery on another.

    ``durable``: the NOTIFY is sent from a transaction that inserts a row, so
    its commit waits for the WAL flush.
    """
    sender, listener = await connect(url), await connect(url)
    arrived: asyncio.Queue[float] = asyncio.Queue()
    await listener.add_listener("bench_wake", lambda *_: arrived.put_nowait(time.perf_counter()))
    await sender.execute("CREATE TEMP TABLE bench_notify (id bigserial PRIMARY KEY, v text)")
    try:
        times = []
        for _ in range(count):
            sent = time.perf_counter()
            if durable:
                async with sender.transaction():
                    await sender.execute("INSERT INTO bench_notify (v) VALUES ('x')")
                    await sender.execute("NOTIFY bench_wake")
            else:
                await sender.execute("NOTIFY bench_wake")
            times.append(await asyncio.wait_for(arrived.get(), 10) - sent)
        return times
    finally:
        await sender.close()
        await listener.close()


def setup(base: str, wakes: int) -> tuple[str, list[str]]:
    """An agent and ``wakes`` unassigned issues; the agent's id and the issues' ids."""
    with httpx.Client(base_url=f"{base}/api", timeout=30) as api:
        company = api.post("/companies", json={"name": f"Bench {uuid.uuid4().hex[:6]}"}).json()
        agent = api.post(
            f"/companies/{company['id']}/agents", json={"name": "bench", "provider": "codex"}
        ).json()
        issues = [
            api.post(f"/companies/{company['id']}/issues", json={"title": f"wake {i}"}).json()["id"]
            for i in range(wakes)
        ]
    return agent["id"], issues


async def wake_latencies(base: str, credential: str, database_url: str, wakes: int) -> list[float]:
    agent_id, issues = await asyncio.to_thread(setup, base, wakes)
    peer = RunnerPeer(base, credential)
    arrived: asyncio.Queue[tuple[float, wire.StartTurn]] = asyncio.Queue()

    async def on_start(start: wire.StartTurn) -> None:
        arrived.put_nowait((time.perf_counter(), start))

    peer.on_start = on_start
    await peer.open()
    db = await connect(database_url)
    try:
        times = []
        for issue_id in issues:
            await db.execute(ASSIGN, uuid.UUID(issue_id), uuid.UUID(agent_id), uuid.uuid4())
            committed = time.perf_counter()
            received, start = await asyncio.wait_for(arrived.get(), 30)
            times.append(received - committed)
            # End the turn at once, so the next wake finds an idle engine.
            await peer.send(
                wire.TurnFinished(seq=0, run_id=start.run_id, status="failed", error="bench")
            )
        return times
    finally:
        await db.close()
        await peer.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wakes", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with control_plane() as cp:
        credential = cp.runner_credential()
        run(wake_latencies(cp.url, credential, cp.database_url, 10))  # warm-up
        baseline = run(notify_round_trips(cp.database_url, args.wakes))
        durable = run(notify_round_trips(cp.database_url, args.wakes, durable=True))
        wakes = run(wake_latencies(cp.url, credential, cp.database_url, args.wakes))
    figures = {
        "notify_ms_median": statistics.median(baseline) * 1000,
        "notify_ms_p99": percentile(baseline, 99) * 1000,
        "durable_notify_ms_median": statistics.median(durable) * 1000,
        "wake_ms_median": statistics.median(wakes) * 1000,
        "wake_ms_p99": percentile(wakes, 99) * 1000,
    }
    figures["ratio_median"] = figures["wake_ms_median"] / figures["notify_ms_median"]
    figures["durable_ratio_median"] = (
        figures["wake_ms_median"] / figures["durable_notify_ms_median"]
    )
    if args.json:
        print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
    else:
        print(
            f"NOTIFY round trip: median {figures['notify_ms_median']:.2f} ms, "
            f"p99 {figures['notify_ms_p99']:.2f} ms"
        )
        print(
            f"durable NOTIFY (INSERT + NOTIFY + COMMIT): median "
            f"{figures['durable_notify_ms_median']:.2f} ms"
        )
        print(
            f"wake to start_turn: median {figures['wake_ms_median']:.2f} ms, "
            f"p99 {figures['wake_ms_p99']:.2f} ms ({len(wakes)} wakes)"
        )
        print(
            f"median ratio {figures['ratio_median']:.1f}x (target: under {TARGET:g}x); "
            f"{figures['durable_ratio_median']:.1f}x the durable baseline"
        )
    return 0 if figures["ratio_median"] < TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
