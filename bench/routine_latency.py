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
  sees the slot's wake (an upper bound of its commit). Each sample is a
  (routine, slot instant) pair read from the slot's own execution: every
  routine's every measured slot exactly once.
- baseline: the timer above, 5 rounds of ``--routines`` slots, each paired with
  its notification by its payload.

Usage: python bench/routine_latency.py [--routines N] [--minutes M] [--json]
Uses PAPERCLIP_DATABASE_URL when set, else an embedded PostgreSQL in a temp dir.
Exits 1 when the median ratio is over the target (10x), 2 when the measurement
is invalid (a slot missing or woken twice, a sample not above zero).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import connect, control_plane, percentile, run
from verdict import Target, Verdict, median, ratio_of, sample_problems

TARGET = 10.0

SEEN = """
SELECT w.id, e.routine_id, e.slot_at FROM wake_requests w
JOIN routine_executions e ON e.wake_request_id = w.id
WHERE w.source = 'routine' AND w.company_id = $1 AND NOT (w.id = ANY($2::uuid[]))
"""


async def timer_floor(
    url: str, rounds: int, slots: int
) -> tuple[dict[tuple[int, int], float | None], list[str]]:
    """Seconds from a due instant to each of ``slots`` durable INSERT + NOTIFY transactions,
    one after the other, received by another connection; each paired with its delivery by
    its payload (its round and slot). The samples, and the deliveries nobody sent."""
    sender, listener = await connect(url), await connect(url)
    arrived: dict[str, float] = {}
    strays: list[str] = []
    wanted: set[str] = set()  # this round's payloads not delivered yet
    delivered = asyncio.Event()

    def heard(_connection: object, _pid: int, _channel: str, payload: str) -> None:
        if payload in arrived:
            strays.append(payload)
        arrived[payload] = time.time()
        wanted.discard(payload)
        if not wanted:
            delivered.set()

    await listener.add_listener("bench_slot", heard)
    await sender.execute("CREATE TEMP TABLE bench_slot (id bigserial PRIMARY KEY, v text)")
    times: dict[tuple[int, int], float | None] = {}
    try:
        for n in range(rounds):
            due = int(time.time()) + 1.0  # the next whole second, as a slot is
            wanted.update(f"{n} {slot}" for slot in range(slots))
            delivered.clear()
            await asyncio.sleep(due - time.time())
            for slot in range(slots):
                async with sender.transaction():
                    await sender.execute("INSERT INTO bench_slot (v) VALUES ('x')")
                    await sender.execute(f"NOTIFY bench_slot, '{n} {slot}'")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(delivered.wait(), 10)
            wanted.clear()
            for slot in range(slots):
                at = arrived.get(f"{n} {slot}")
                times[(n, slot)] = None if at is None else at - due
        asked = {f"{n} {slot}" for n in range(rounds) for slot in range(slots)}
        strays += [payload for payload in arrived if payload not in asked]
        return times, [f"timer floor: NOTIFY {p!r} delivered unasked or twice" for p in strays]
    finally:
        await sender.close()
        await listener.close()


def setup(base: str, routines: int) -> tuple[str, list[uuid.UUID]]:
    """A company, an agent and ``routines`` routines due every minute; the company's id and
    the routines' ids."""
    with httpx.Client(base_url=f"{base}/api", timeout=30) as api:
        company = api.post("/companies", json={"name": f"Bench {uuid.uuid4().hex[:6]}"}).json()
        agent = api.post(
            f"/companies/{company['id']}/agents", json={"name": "bench", "provider": "codex"}
        ).json()
        made = []
        for i in range(routines):
            routine = api.post(
                f"/companies/{company['id']}/routines",
                json={
                    "name": f"every minute {i}",
                    "agent_id": agent["id"],
                    "title": "Slot {{time}}",
                    "cron": "* * * * *",
                    "concurrency": "allow",
                },
            )
            made.append(uuid.UUID(routine.raise_for_status().json()["id"]))
    return str(company["id"]), made


async def slot_latencies(
    database_url: str, company_id: str, routines: list[uuid.UUID], minutes: int
) -> tuple[dict[tuple[uuid.UUID, int], float | None], list[str]]:
    """Each routine's slot of each measured minute, by (routine, slot instant): seconds from
    the slot's due instant to a read that sees its wake. And what makes them invalid: a
    slot missing, woken twice, or seen before it was due."""
    listener, reader = await connect(database_url), await connect(database_url)
    nudged = asyncio.Event()
    await listener.add_listener("paperclip_wakes", lambda *_: nudged.set())
    seen: set[uuid.UUID] = set()
    times: dict[tuple[uuid.UUID, int], float | None] = {}
    problems: list[str] = []
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
                seen.add(row["id"])
                slot = row["slot_at"].timestamp()
                if not start <= slot < end:
                    continue
                key = (row["routine_id"], round(slot))
                if key in times:
                    problems.append(f"routine {key[0]}: slot {key[1]} woken twice")
                times[key] = now - slot
    finally:
        await listener.close()
        await reader.close()
    expected = [(r, slot) for slot in range(start, end, 60) for r in routines]
    problems += sample_problems("slot to wake", times, expected, count=len(routines) * minutes)
    return times, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routines", type=int, default=50)
    parser.add_argument("--minutes", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with control_plane() as cp:
        company_id, routines = setup(cp.url, args.routines)
        floor, problems = run(timer_floor(cp.database_url, 5, args.routines))
        samples, slot_problems = run(
            slot_latencies(cp.database_url, company_id, routines, args.minutes)
        )
    expected_floor = [(n, slot) for n in range(5) for slot in range(args.routines)]
    problems += sample_problems("timer floor", floor, expected_floor)
    problems += slot_problems
    baseline = [v for v in floor.values() if v is not None]
    slots = [v for v in samples.values() if v is not None]
    figures = {
        "floor_ms_median": median(baseline) * 1000,
        "floor_ms_p99": percentile(baseline, 99) * 1000,
        "slot_ms_median": median(slots) * 1000,
        "slot_ms_p99": percentile(slots, 99) * 1000,
        "slots": float(len(slots)),
    }
    figures["ratio_median"] = ratio_of(figures["slot_ms_median"], figures["floor_ms_median"])
    # The last slot of the pass against the floor's middle one.
    figures["ratio_p99"] = ratio_of(figures["slot_ms_p99"], figures["floor_ms_median"])
    expected = args.routines * args.minutes
    verdict = Verdict(
        "routine_latency",
        [
            Target(
                "slot to wake, median",
                f"{figures['slot_ms_median']:.2f} ms",
                f"{figures['floor_ms_median']:.2f} ms timer floor",
                figures["ratio_median"],
                f"under {TARGET:g}x",
                figures["ratio_median"] < TARGET,
            )
        ],
        problems,
    )
    if args.json:
        rounded = {k: round(v, 3) if math.isfinite(v) else None for k, v in figures.items()}
        print(json.dumps({**rounded, "verdict": verdict.as_json()}))
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
        print(
            f"median ratio {figures['ratio_median']:.1f}x, p99 against the floor's median "
            f"{figures['ratio_p99']:.1f}x (target: under {TARGET:g}x)"
        )
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
