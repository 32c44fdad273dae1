"""Wake-to-run latency: from an assignment's commit to its run's ``start_turn`` at the runner.

Measured against a baseline taken in the same run on the same database: a
bare ``NOTIFY`` round trip (one connection notifies, another that listens
receives it), the floor of any notification-driven wake-up.

- wake: a real control plane (``paperclip serve --no-runner``) and a scripted
  runner peer over its WebSocket. One issue at a time is assigned by a
  transaction of the benchmark's own (the issue's assignee and its queued
  wake, as the API writes them); the clock starts when that ``COMMIT``
  returns and stops when the peer receives the ``start_turn`` of that issue's
  run: each sample is paired with its own issue and run (checked against the
  database's run of the issue), never with whichever ``start_turn`` comes
  next. The peer then ends the turn at once so the next wake starts from an
  idle engine. The peer is one runner process across the warm-up and the
  measurement: it reconnects with its ``received_seq`` and drops a resent
  message, as the runner does.
- baseline: ``NOTIFY`` from one connection, received by a ``LISTEN`` on another,
  each paired with its delivery by its payload.
- durable baseline (reported, not the target's): the same, from a transaction
  that also inserts a row, so that its ``COMMIT`` is durable (a WAL flush), as
  any claim's must be: the least a wake-up that writes a run can cost.

Usage: python bench/wake_latency.py [--wakes N] [--json]
Uses PAPERCLIP_DATABASE_URL when set, else an embedded PostgreSQL in a temp dir.
Exits 1 when the median ratio is over the target (5x), 2 when the measurement
is invalid (a sample missing, not above zero, unpaired or paired twice; see
``verdict.py``), naming the bad samples.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import Arrival, RunnerPeer, StartTurns, connect, control_plane, percentile, run, wire
from verdict import Target, Verdict, median, names, ratio_of, repeated, sample_problems

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


async def notify_round_trips(
    url: str, count: int, *, durable: bool = False
) -> tuple[dict[int, float | None], list[str]]:
    """Seconds from sending NOTIFY on one connection to its delivery on another, by payload.

    Each notification carries its number, and is paired with the one sent with
    it: a late or repeated delivery cannot shift the others. Returns the samples
    (None: never delivered) and the payloads nobody sent or delivered twice.
    ``durable``: the NOTIFY is sent from a transaction that inserts a row, so
    its commit waits for the WAL flush.
    """
    sender, listener = await connect(url), await connect(url)
    waiting: dict[str, asyncio.Future[float]] = {}
    strays: list[str] = []

    def heard(_connection: object, _pid: int, _channel: str, payload: str) -> None:
        future = waiting.get(payload)
        if future is None or future.done():
            strays.append(payload)
        else:
            future.set_result(time.perf_counter())

    await listener.add_listener("bench_wake", heard)
    await sender.execute("CREATE TEMP TABLE bench_notify (id bigserial PRIMARY KEY, v text)")
    times: dict[int, float | None] = {}
    try:
        for n in range(1, count + 1):
            arrived = waiting[str(n)] = asyncio.get_running_loop().create_future()
            sent = time.perf_counter()
            if durable:
                async with sender.transaction():
                    await sender.execute("INSERT INTO bench_notify (v) VALUES ('x')")
                    await sender.execute(f"NOTIFY bench_wake, '{n}'")
            else:
                await sender.execute(f"NOTIFY bench_wake, '{n}'")
            try:
                times[n] = await asyncio.wait_for(arrived, 10) - sent
            except TimeoutError:
                times[n] = None
        return times, [f"NOTIFY {payload!r} delivered unasked or twice" for payload in strays]
    finally:
        await sender.close()
        await listener.close()


def setup(base: str, wakes: int) -> tuple[str, list[uuid.UUID]]:
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
    return agent["id"], [uuid.UUID(issue) for issue in issues]


async def measure_wakes(
    peer: RunnerPeer,
    turns: StartTurns,
    assign: Callable[[uuid.UUID], Awaitable[None]],
    issues: list[uuid.UUID],
    within: float = 30,
) -> tuple[dict[uuid.UUID, float], list[Arrival]]:
    """Wake each issue in turn (``assign`` commits its wake) and wait for that issue's
    ``start_turn``, then end its turn at once, so the next wake finds an idle engine.

    ``turns`` is the peer's ``on_start`` since before it connected, so that whatever it
    handles on this connection is seen. Returns when each wake committed and every
    ``start_turn`` the peer handed over, in order: ``pair_wakes`` pairs them by issue
    and run. A wake whose turn does not come ``within`` seconds ends the measurement
    (the rest are missing).
    """
    commits: dict[uuid.UUID, float] = {}
    for issue_id in issues:
        await assign(issue_id)
        commits[issue_id] = time.perf_counter()
        arrival = await turns.of(issue_id, within)
        if arrival is None:
            break
        start = arrival.start
        await peer.send(
            wire.TurnFinished(
                seq=0, run_id=start.run_id, turn=start.turn, status="failed", error="bench"
            )
        )
    return commits, turns.arrivals


@dataclass(frozen=True)
class WakeSample:
    """One wake: its issue, the run whose ``start_turn`` it is paired with, and the seconds
    from its commit to that ``start_turn`` (None: it never came)."""

    issue_id: uuid.UUID
    run_id: uuid.UUID | None
    seconds: float | None


def pair_wakes(
    asked: list[uuid.UUID],
    commits: Mapping[uuid.UUID, float],
    arrivals: list[Arrival],
    runs: Mapping[uuid.UUID, list[uuid.UUID]] | None = None,
    count: int | None = None,
) -> tuple[dict[uuid.UUID, WakeSample], list[str]]:
    """Each asked issue's sample, from its wake's commit to its run's ``start_turn``, and
    what makes the measurement invalid.

    Pairs by identity: an issue's sample is the first ``start_turn`` naming that
    issue, whatever else arrived before it. Invalid: a ``start_turn`` handled twice
    (a seq not above the one before: a resent message the peer did not drop), one
    for an issue this measurement did not wake, a second one for an issue, a run
    id paired with two issues or not the one the database made for the issue
    (``runs``: the issue's runs), and any sample missing or not above zero.
    """
    problems: list[str] = []
    wanted = set(asked)
    first: dict[uuid.UUID, Arrival] = {}
    last_seq = 0
    for arrival in arrivals:
        start = arrival.start
        if start.seq <= last_seq:
            problems.append(
                f"start_turn seq {start.seq} (run {start.run_id}) handled after seq {last_seq}:"
                " a resent message was not dropped"
            )
        last_seq = max(last_seq, start.seq)
        if start.issue_id not in wanted:
            problems.append(
                f"start_turn seq {start.seq} (run {start.run_id}) for issue {start.issue_id},"
                " which this measurement did not wake"
            )
        elif start.issue_id in first:
            problems.append(
                f"issue {start.issue_id}: a second start_turn (seq {start.seq}, run"
                f" {start.run_id}) after seq {first[start.issue_id].start.seq}"
            )
        else:
            first[start.issue_id] = arrival
    samples: dict[uuid.UUID, WakeSample] = {}
    for issue_id in asked:
        arrival, committed = first.get(issue_id), commits.get(issue_id)
        if arrival is None or committed is None:
            samples[issue_id] = WakeSample(issue_id, None, None)
        else:
            samples[issue_id] = WakeSample(issue_id, arrival.start.run_id, arrival.at - committed)
    seconds = {issue_id: sample.seconds for issue_id, sample in samples.items()}
    problems += sample_problems("wake to start_turn", seconds, asked, count=count)
    problems += repeated("run ids paired", [a.start.run_id for a in first.values()])
    for issue_id, arrival in first.items() if runs is not None else ():
        made = runs.get(issue_id, [])  # type: ignore[union-attr]
        if made != [arrival.start.run_id]:
            problems.append(
                f"issue {issue_id}: paired with run {arrival.start.run_id}, the database's"
                f" runs of it: {names(made) or 'none'}"
            )
    return samples, problems


async def database_runs(
    db: asyncpg.Connection, issues: list[uuid.UUID]
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """The runs the control plane made for each issue."""
    rows = await db.fetch(
        "SELECT issue_id, id FROM runs WHERE issue_id = ANY($1::uuid[]) ORDER BY created_at",
        issues,
    )
    made: dict[uuid.UUID, list[uuid.UUID]] = {}
    for row in rows:
        made.setdefault(row["issue_id"], []).append(row["id"])
    return made


async def wake_latencies(
    peer: RunnerPeer, base: str, database_url: str, wakes: int
) -> tuple[dict[uuid.UUID, WakeSample], list[str]]:
    """``wakes`` wakes of fresh issues through ``peer`` (opened and closed here): the samples
    by issue, and what makes them invalid."""
    agent_id, issues = await asyncio.to_thread(setup, base, wakes)
    agent = uuid.UUID(agent_id)
    turns = StartTurns()
    peer.on_start = turns
    await peer.open()
    db = await connect(database_url)
    try:

        async def assign(issue_id: uuid.UUID) -> None:
            await db.execute(ASSIGN, issue_id, agent, uuid.uuid4())

        commits, arrivals = await measure_wakes(peer, turns, assign, issues)
        runs = await database_runs(db, issues)
        return pair_wakes(issues, commits, arrivals, runs, count=wakes)
    finally:
        await db.close()
        await peer.close()


def valid(samples: Iterable[float | None]) -> list[float]:
    return [value for value in samples if value is not None]


def judge(
    baseline: dict[int, float | None],
    durable: dict[int, float | None],
    wakes: dict[uuid.UUID, WakeSample],
    problems: list[str],
) -> tuple[dict[str, float], Verdict]:
    """The figures, and the verdict: invalid on any problem, else the median ratio's target."""
    notify, durable_notify = valid(baseline.values()), valid(durable.values())
    wake = valid(sample.seconds for sample in wakes.values())
    figures = {
        "notify_ms_median": median(notify) * 1000,
        "notify_ms_p99": percentile(notify, 99) * 1000,
        "durable_notify_ms_median": median(durable_notify) * 1000,
        "wake_ms_median": median(wake) * 1000,
        "wake_ms_p99": percentile(wake, 99) * 1000,
        "wake_ms_min": min(wake, default=math.nan) * 1000,  # a negative one: a shifted pair
        "wakes": float(len(wake)),
    }
    figures["ratio_median"] = ratio_of(figures["wake_ms_median"], figures["notify_ms_median"])
    figures["durable_ratio_median"] = ratio_of(
        figures["wake_ms_median"], figures["durable_notify_ms_median"]
    )
    wake_figure = f"{figures['wake_ms_median']:.2f} ms"
    verdict = Verdict(
        "wake_latency",
        [
            Target(
                "wake to start_turn, median",
                wake_figure,
                f"{figures['notify_ms_median']:.2f} ms NOTIFY",
                figures["ratio_median"],
                f"under {TARGET:g}x",
                figures["ratio_median"] < TARGET,
            ),
            Target(
                "the same, against a durable NOTIFY",
                wake_figure,
                f"{figures['durable_notify_ms_median']:.2f} ms durable NOTIFY",
                figures["durable_ratio_median"],
            ),
        ],
        problems,
    )
    return figures, verdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wakes", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with control_plane() as cp:
        # One runner process for the whole benchmark: its second connection says how far
        # it got (received_seq), so nothing of the warm-up is sent to it again.
        peer = RunnerPeer(cp.url, cp.runner_credential())
        run(wake_latencies(peer, cp.url, cp.database_url, 10))  # warm-up
        baseline, problems = run(notify_round_trips(cp.database_url, args.wakes))
        durable, durable_problems = run(
            notify_round_trips(cp.database_url, args.wakes, durable=True)
        )
        wakes, wake_problems = run(wake_latencies(peer, cp.url, cp.database_url, args.wakes))
    problems += sample_problems("NOTIFY round trip", baseline, range(1, args.wakes + 1))
    # Resent messages the peer dropped (seq at or below its position): harmless, counted.
    resent = len(peer.dropped)
    problems += durable_problems
    problems += sample_problems("durable NOTIFY", durable, range(1, args.wakes + 1))
    problems += wake_problems
    figures, verdict = judge(baseline, durable, wakes, problems)
    figures["resent_dropped"] = float(resent)
    if args.json:
        rounded = {k: round(v, 3) if math.isfinite(v) else None for k, v in figures.items()}
        print(json.dumps({**rounded, "verdict": verdict.as_json()}))
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
            f"p99 {figures['wake_ms_p99']:.2f} ms ({figures['wakes']:.0f} of {args.wakes} wakes,"
            f" each paired with its own issue's run; {resent} resent messages dropped)"
        )
        print(
            f"median ratio {figures['ratio_median']:.1f}x (target: under {TARGET:g}x); "
            f"{figures['durable_ratio_median']:.1f}x the durable baseline"
        )
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
