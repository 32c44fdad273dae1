"""Slot-to-wake latency: from a cron slot's due instant to its wake committed, on the real clock.

Measured against a baseline taken in the same run on the same database: a
timer that sleeps until a due instant, then commits, for each of as many slots
as there are routines, one transaction of an ``INSERT`` and a ``NOTIFY`` that
another connection receives: the floor of any scheduler that durably writes a
row per slot at its due time and lets the others know.

- slots: a real control plane (``paperclip serve --no-runner``, its routine
  scheduler on the system clock) and ``--routines`` routines due every minute
  (concurrency ``allow``), for ``--minutes`` minutes: every routine's slot is
  due at the same instant, so later ones wait for the earlier ones (the p99
  says how long the last of them waits). A connection ``LISTEN``s on the wake
  channel; the clock stops when a read made after a notification returns and
  sees the slot's wake (an upper bound of its commit).
- baseline: the timer above, 5 rounds of ``--routines`` slots.

Usage: python bench/routine_latency.py [--routines N] [--minutes M] [--json]
Uses PAPERCLIP_DATABASE_URL when set, else an embedded PostgreSQL in a temp dir.
Exits 1 when the median ratio is over the target (10x).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import connect, control_plane, percentile, run

TARGET = 10.0

SEEN = """
SELECT w.id, e.slot_at FROM wake_requests w
JOIN routine_executions e ON e.wake_request_id = w.id
WHERE w.source = 'routine' AND w.company_id = $1 AND NOT (w.id = ANY($2::uuid[]))
"""


async def timer_floor(url: str, rounds: int, slots: int) -> list[float]:
    """Seconds from a due instant to each of ``slots`` durable INSERT + NOTIFY transactions,
    one after the other, received by another connection."""
    sender, listener = await connect(url), await connect(url)
    arrived: asyncio.Queue[float] = asyncio.Queue()
    await listener.add_listener("bench_slot", lambda *_: arrived.put_nowait(time.time()))
    await sender.execute("CREATE TEMP TABLE bench_slot (id bigserial PRIMARY KEY, v text)")
    try:
        times = []
        for _ in range(rounds):
            due = int(time.time()) + 1.0  # the next whole second, as a slot is
            await asyncio.sleep(due - time.time())
            for _ in range(slots):
                async with sender.transaction():
                    await sender.execute("INSERT INTO bench_slot (v) VALUES ('x')")
                    await sender.execute("NOTIFY bench_slot")
            for _ in range(slots):
                times.append(await asyncio.wait_for(arrived.get(), 10) - due)
        return times
    finally:
        await sender.close()
        await listener.close()


def setup(base: str, routines: int) -> str:
    """A company, an agent and ``routines`` routines due every minute; the company's id."""
    with httpx.Client(base_url=f"{base}/api", timeout=30) as api:
        company = api.post("/companies", json={"name": f"Bench {uuid.uuid4().hex[:6]}"}).json()
        agent = api.post(
            f"/companies/{company['id']}/agents", json={"name": "bench", "provider": "codex"}
        ).json()
        for i in range(routines):
            made = api.post(
                f"/companies/{company['id']}/routines",
                json={
                    "name": f"every minute {i}",
                    "agent_id": agent["id"],
                    "title": "Slot {{time}}",
                    "cron": "* * * * *",
                    "concurrency": "allow",
                },
            )
            made.raise_for_status()
    return str(company["id"])


async def slot_latencies(database_url: str, company_id: str, minutes: int) -> list[float]:
    listener, reader = await connect(database_url), await connect(database_url)
    nudged = asyncio.Event()
    await listener.add_listener("paperclip_wakes", lambda *_: nudged.set())
    seen: dict[uuid.UUID, float] = {}
    times: list[float] = []
    # From the first whole minute after the schedules started, for ``minutes`` minutes.
    start = (int(time.time()) // 60 + 2) * 60
    end = start + minutes * 60
    try:
        while time.time() < end + 10:
            try:
                await asyncio.wait_for(nudged.wait(), 1)
            except TimeoutError:
                continue
            nudged.clear()
            rows = await reader.fetch(SEEN, uuid.UUID(company_id), list(seen))
            now = time.time()
            for row in rows:
                seen[row["id"]] = now
                slot = row["slot_at"].timestamp()
                if start <= slot < end:
                    times.append(now - slot)
        return times
    finally:
        await listener.close()
        await reader.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routines", type=int, default=50)
    parser.add_argument("--minutes", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with control_plane() as cp:
        company_id = setup(cp.url, args.routines)
        baseline = run(timer_floor(cp.database_url, 5, args.routines))
        slots = run(slot_latencies(cp.database_url, company_id, args.minutes))
    figures = {
        "floor_ms_median": statistics.median(baseline) * 1000,
        "floor_ms_p99": percentile(baseline, 99) * 1000,
        "slot_ms_median": statistics.median(slots) * 1000,
        "slot_ms_p99": percentile(slots, 99) * 1000,
        "slots": float(len(slots)),
    }
    figures["ratio_median"] = figures["slot_ms_median"] / figures["floor_ms_median"]
    expected = args.routines * args.minutes
    if args.json:
        print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
    else:
        print(
            f"timer floor ({args.routines} x INSERT + NOTIFY + COMMIT at a due second): "
            f"median {figures['floor_ms_median']:.2f} ms, p99 {figures['floor_ms_p99']:.2f} ms"
        )
        print(
            f"slot to wake: median {figures['slot_ms_median']:.2f} ms, p99 "
            f"{figures['slot_ms_p99']:.2f} ms ({len(slots)} slots of {expected}, "
            f"{args.routines} routines due together each minute; {datetime.now(UTC):%Y-%m-%d})"
        )
        print(f"median ratio {figures['ratio_median']:.1f}x (target: under {TARGET:g}x)")
    if len(slots) != expected:
        print(f"error: {len(slots)} slots measured, {expected} expected", file=sys.stderr)
        return 1
    return 0 if figures["ratio_median"] < TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
