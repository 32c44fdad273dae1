"""Wake admission with budgets on, as a ratio to the same with budgets off, in one run.

A real control plane (``paperclip serve --no-runner``) and a scripted runner
peer over its WebSocket, as ``wake_latency.py``. Two companies on the same
server, each with an agent and issues: one with no budget, one whose company
and agent each have a budget (with a run reservation, so every admission
locks both budget months, checks them and reserves). Wakes alternate between
the two, one at a time; each is timed from its ``COMMIT`` to the run's
``start_turn`` at the peer, which then ends the turn at once (its reservation
is given back). The figure is the ratio of the medians (target: at most 1.2).

Usage: python bench/budget_admission.py [--wakes N] [--json]
Uses PAPERCLIP_DATABASE_URL when set, else an embedded PostgreSQL in a temp dir.
Exits 1 when the ratio is over the target.
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
from wake_latency import ASSIGN

TARGET = 1.2


def company(base: str, wakes: int, *, budgets: bool) -> tuple[str, list[str]]:
    """A company with an agent and ``wakes`` issues (and its budgets); the agent, the issues."""
    with httpx.Client(base_url=f"{base}/api", timeout=30) as api:
        made = api.post("/companies", json={"name": f"Bench {uuid.uuid4().hex[:6]}"}).json()
        cid = made["id"]
        agent = api.post(f"/companies/{cid}/agents", json={"name": "b", "provider": "codex"}).json()
        if budgets:
            for scope, scope_id in (("company", None), ("agent", agent["id"])):
                r = api.post(
                    f"/companies/{cid}/budgets",
                    json={
                        "scope": scope,
                        "scope_id": scope_id,
                        "monthly_limit_micros": 10**12,
                        "run_reserve_micros": 1_000_000,
                    },
                )
                r.raise_for_status()
        issues = [
            api.post(f"/companies/{cid}/issues", json={"title": f"wake {i}"}).json()["id"]
            for i in range(wakes)
        ]
    return agent["id"], issues


async def admissions(
    base: str, credential: str, database_url: str, wakes: int
) -> dict[str, list[float]]:
    plain = await asyncio.to_thread(company, base, wakes, budgets=False)
    budgeted = await asyncio.to_thread(company, base, wakes, budgets=True)
    peer = RunnerPeer(base, credential)
    arrived: asyncio.Queue[tuple[float, wire.StartTurn]] = asyncio.Queue()

    async def on_start(start: wire.StartTurn) -> None:
        arrived.put_nowait((time.perf_counter(), start))

    peer.on_start = on_start
    await peer.open()
    db = await connect(database_url)
    times: dict[str, list[float]] = {"off": [], "on": []}
    try:
        for index in range(wakes):
            for label, (agent_id, issues) in (("off", plain), ("on", budgeted)):
                await db.execute(
                    ASSIGN, uuid.UUID(issues[index]), uuid.UUID(agent_id), uuid.uuid4()
                )
                committed = time.perf_counter()
                received, start = await asyncio.wait_for(arrived.get(), 30)
                times[label].append(received - committed)
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
        run(admissions(cp.url, credential, cp.database_url, 10))  # warm-up
        times = run(admissions(cp.url, credential, cp.database_url, args.wakes))
    figures = {
        "off_ms_median": statistics.median(times["off"]) * 1000,
        "off_ms_p99": percentile(times["off"], 99) * 1000,
        "on_ms_median": statistics.median(times["on"]) * 1000,
        "on_ms_p99": percentile(times["on"], 99) * 1000,
    }
    figures["ratio_median"] = figures["on_ms_median"] / figures["off_ms_median"]
    if args.json:
        print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
    else:
        print(
            f"wake to start_turn, no budget: median {figures['off_ms_median']:.2f} ms, "
            f"p99 {figures['off_ms_p99']:.2f} ms"
        )
        print(
            f"wake to start_turn, two budgets: median {figures['on_ms_median']:.2f} ms, "
            f"p99 {figures['on_ms_p99']:.2f} ms"
        )
        print(f"ratio {figures['ratio_median']:.2f}x (target: at most {TARGET:g}x)")
    return 0 if figures["ratio_median"] <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
