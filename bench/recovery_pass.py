"""Recovery costs what is pending, not what is past: a reconciler pass over a small and a large history.

Two databases on one PostgreSQL, the same in all but their past:

- small: 10^3 history rows (settled runs, their events and tool calls);
- large: 10^6 history rows of the same shape.

Each round writes the same pending set into both (``--pending`` runs lost with
their provider, candidates of the ``lost_runs`` policy) and times the real
reconciler's passes over it (``Reconciler.pass_once``, the engine as
``paperclip serve`` composes it, with the installed plugins; each pass
settles up to 100 candidates) until none is left, a pass on one database
then one on the other, so both see the same moments of the machine. The past
is vacuumed and checkpointed before the first timed pass, as pgbench does. The figure is the ratio of the
median pass on the large history to the median on the small one.

Usage: python bench/recovery_pass.py [--rounds N] [--pending N] [--history N] [--json]
Uses PAPERCLIP_DATABASE_URL (a server where it may create databases) when set,
else an embedded PostgreSQL in a temp dir. Exits 1 when the ratio is over 1.5,
2 when the measurement is invalid (a round not settling every pending run, a
settlement failing, no pass timed).
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

from support import connect
from verdict import Invalid, Target, Verdict, median, ratio_of, value_problems

from paperclip.db import migrate
from paperclip.db.embedded import EmbeddedPostgres
from tests.support.recovery_load import (
    Tenant,
    seed_history,
    seed_lost_runs,
    seed_tenant,
)

TARGET = 1.5
SMALL_HISTORY = 1_000


def server_url(tmp: str) -> tuple[str, EmbeddedPostgres | None]:
    url = os.environ.get("PAPERCLIP_DATABASE_URL")
    if url:
        return url, None
    server = EmbeddedPostgres(Path(tmp) / "pgdata")
    return server.start(), server


def with_database(url: str, name: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=name).render_as_string(hide_password=False)


async def create_database(url: str, name: str) -> None:
    conn = await connect(url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def drop_database(url: str, name: str) -> None:
    conn = await connect(url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


class Side:
    """One database and a control plane's engine on it (not started: the bench drives passes)."""

    def __init__(self, name: str, url: str, history: int) -> None:
        self.name, self.url, self.history = name, url, history
        self.passes: list[float] = []
        self.tenant: Tenant | None = None

    async def seed(self, pending: int) -> None:
        conn = await connect(self.url)
        try:
            if self.tenant is None:
                self.tenant = await seed_tenant(conn)
                await seed_history(conn, self.tenant, self.history)
                # As pgbench does before a run: the past vacuumed and on disk, so neither
                # autovacuum nor the checkpoint of the seeding runs during the timed passes.
                await conn.execute("VACUUM ANALYZE")
                await conn.execute("CHECKPOINT")
            await seed_lost_runs(conn, self.tenant, pending)
            await conn.execute("ANALYZE")
        finally:
            await conn.close()

    async def open(self) -> None:
        from paperclip.container import Container
        from paperclip.settings import Settings

        settings = Settings(database_url=self.url, data_dir=Path(tempfile.gettempdir()))
        self.container = Container(settings=settings)
        self.container.init_resources()
        if "lost_runs" not in {p.name for p in self.container.plugin_host().recovery_policies()}:
            raise SystemExit("the lost_runs policy is not installed (./dev sets it up)")
        self.engine = self.container.run_engine()  # as serve composes it; never started here

    async def close(self) -> None:
        from paperclip.container import close_pools

        await close_pools(self.container)
        self.container.shutdown_resources()

    async def step(self) -> int | None:
        """One timed pass; how many it settled, or None when nothing was left."""
        reconciler = self.engine.reconciler
        started = time.perf_counter()
        await reconciler.pass_once()
        elapsed = time.perf_counter() - started
        report = reconciler.reports["lost_runs"]
        if report.candidates == 0:
            return None
        if report.failed:
            raise Invalid(f"{self.name}: a settlement failed: {report.last_error}")
        self.passes.append(elapsed)
        return report.settled


async def drain_side_by_side(sides: tuple[Side, Side], pending: int) -> None:
    """Passes on each side in turn, the order swapped at each step, until both are done:
    both meet the same moments of a noisy machine."""
    settled = dict.fromkeys((side.name for side in sides), 0)
    active = list(sides)
    step = 0
    while active:
        for side in list(active if step % 2 == 0 else reversed(active)):
            done = await side.step()
            if done is None:
                active.remove(side)
            else:
                settled[side.name] += done
        step += 1
    wrong = [f"{name}: settled {count} of {pending}" for name, count in settled.items()]
    if any(count != pending for count in settled.values()):
        raise Invalid(*wrong)


async def bench(url: str, args: argparse.Namespace) -> dict[str, object]:
    names = {size: f"paperclip_bench_recovery_{size}_{uuid.uuid4().hex[:6]}" for size in ("s", "l")}
    for name in names.values():
        await create_database(url, name)
    try:
        for name in names.values():
            await asyncio.to_thread(migrate.upgrade, with_database(url, name))
        small = Side("small", with_database(url, names["s"]), SMALL_HISTORY)
        large = Side("large", with_database(url, names["l"]), args.history)
        sides = (small, large)
        seeding = time.perf_counter()
        for side in sides:
            await side.seed(0)
        seeded = time.perf_counter() - seeding
        for side in sides:
            await side.open()
        try:
            for _ in range(args.rounds):
                for side in sides:
                    await side.seed(args.pending)
                await drain_side_by_side(sides, args.pending)
        finally:
            for side in sides:
                await side.close()
    finally:
        for name in names.values():
            await drop_database(url, name)
    small_median, large_median = median(small.passes), median(large.passes)
    problems = value_problems("passes on the small past", small.passes)
    problems += value_problems("passes on the large past", large.passes)
    return {
        "pending_per_round": args.pending,
        "rounds": args.rounds,
        "history_small": SMALL_HISTORY,
        "history_large": args.history,
        "seconds_to_seed_history": round(seeded, 1),
        "passes": len(small.passes),
        "pass_ms_small": round(small_median * 1000, 1),
        "pass_ms_large": round(large_median * 1000, 1),
        "ratio": round(ratio_of(large_median, small_median), 3),
        "target": TARGET,
        "problems": problems,
    }


def judge(result: dict[str, Any], problems: list[str]) -> Verdict:
    ratio = float(result.get("ratio", math.nan))
    return Verdict(
        "recovery_pass",
        [
            Target(
                f"reconciler pass, {result.get('history_large', 0):,} history rows",
                f"{result.get('pass_ms_large', math.nan)} ms",
                f"{result.get('pass_ms_small', math.nan)} ms on {SMALL_HISTORY:,} rows",
                ratio,
                f"at most {TARGET:g}x",
                ratio <= TARGET,
            )
        ],
        problems,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pending", type=int, default=500, help="lost runs per round")
    parser.add_argument("--history", type=int, default=1_000_000, help="rows of the large past")
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
            f"history {SMALL_HISTORY:,} rows: {result['pass_ms_small']} ms per pass; "
            f"{args.history:,} rows: {result['pass_ms_large']} ms per pass "
            f"(medians of {result['passes']} passes of up to 100 lost runs each)"
        )
        said = "ok" if result["ratio"] <= TARGET else "too slow: recovery pays for the past"
        print(f"ratio {result['ratio']:.2f}x (target at most {TARGET}x) {said}")
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    sys.exit(main())
