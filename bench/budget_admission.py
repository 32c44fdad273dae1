"""Wake admission with budgets on, as a ratio to the same with budgets off, in one run.

A real control plane (``paperclip serve --no-runner``) and a scripted runner
peer over its WebSocket, as ``wake_latency.py``. Two companies on the same
server, each with an agent and issues: one with no budget, one whose company
and agent each have a budget (with a run reservation, so every admission
locks both budget months, checks them and reserves). Wakes alternate between
the two, one at a time; each is timed from its ``COMMIT`` to the ``start_turn`` of
that issue's run at the peer (paired by issue and run, as ``wake_latency.py``
does), which then ends the turn at once (its reservation is given back). The
figure is the ratio of the medians (target: at most 1.2).

Usage: python bench/budget_admission.py [--wakes N] [--json]
Uses PAPERCLIP_DATABASE_URL when set, else an embedded PostgreSQL in a temp dir.
Exits 1 when the ratio is over the target, 2 when the measurement is invalid.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import RunnerPeer, StartTurns, connect, control_plane, percentile, run
from verdict import Target, Verdict, median, ratio_of
from wake_latency import ASSIGN, database_runs, measure_wakes, pair_wakes

TARGET = 1.2


def company(base: str, wakes: int, *, budgets: bool) -> tuple[uuid.UUID, list[uuid.UUID]]:
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
    return uuid.UUID(agent["id"]), [uuid.UUID(issue) for issue in issues]


async def admissions(
    peer: RunnerPeer, base: str, database_url: str, wakes: int
) -> tuple[dict[str, list[float]], list[str]]:
    """``wakes`` wakes of each company, alternating; each sample paired with its own issue's
    run (``wake_latency.pair_wakes``). The samples by side, and what makes them invalid."""
    plain = await asyncio.to_thread(company, base, wakes, budgets=False)
    budgeted = await asyncio.to_thread(company, base, wakes, budgets=True)
    assignee = {issue: agent for agent, issues in (plain, budgeted) for issue in issues}
    alternating = [issue for pair in zip(plain[1], budgeted[1], strict=True) for issue in pair]
    turns = StartTurns()
    peer.on_start = turns
    await peer.open()
    db = await connect(database_url)
    try:

        async def assign(issue_id: uuid.UUID) -> None:
            await db.execute(ASSIGN, issue_id, assignee[issue_id], uuid.uuid4())

        commits, arrivals = await measure_wakes(peer, turns, assign, alternating)
        runs = await database_runs(db, alternating)
    finally:
        await db.close()
        await peer.close()
    samples, problems = pair_wakes(alternating, commits, arrivals, runs, count=2 * wakes)
    times = {
        label: [v for issue in issues if (v := samples[issue].seconds) is not None]
        for label, (_, issues) in (("off", plain), ("on", budgeted))
    }
    return times, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wakes", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with control_plane() as cp:
        # One runner process across the warm-up and the measurement (see wake_latency.py).
        peer = RunnerPeer(cp.url, cp.runner_credential())
        run(admissions(peer, cp.url, cp.database_url, 10))  # warm-up
        times, problems = run(admissions(peer, cp.url, cp.database_url, args.wakes))
    figures = {
        "off_ms_median": median(times["off"]) * 1000,
        "off_ms_p99": percentile(times["off"], 99) * 1000,
        "on_ms_median": median(times["on"]) * 1000,
        "on_ms_p99": percentile(times["on"], 99) * 1000,
    }
    figures["ratio_median"] = ratio_of(figures["on_ms_median"], figures["off_ms_median"])
    verdict = Verdict(
        "budget_admission",
        [
            Target(
                "wake to start_turn with two budgets, median",
                f"{figures['on_ms_median']:.2f} ms",
                f"{figures['off_ms_median']:.2f} ms without",
                figures["ratio_median"],
                f"at most {TARGET:g}x",
                figures["ratio_median"] <= TARGET,
            )
        ],
        problems,
    )
    if args.json:
        rounded = {k: round(v, 3) if math.isfinite(v) else None for k, v in figures.items()}
        print(json.dumps({**rounded, "verdict": verdict.as_json()}))
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
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
