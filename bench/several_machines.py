"""Runs completed per second with one control-plane replica and with two, in one run.

The topology of ``tests/process/test_several_machines.py``: a standalone
PostgreSQL, two replicas and two runners, each in its own network namespace.
First one replica serves (the other is stopped; both runners dial the one),
then both do (each runner dials its own first). Each phase assigns
``--runs`` issues at once (each run posts one comment and finishes, on the
fake app-server) and times them from the first assignment to the last run
settled. The figure is the ratio of the two rates (two replicas / one).

It has no target: the ratio is reported. Exits 2 when the measurement is
invalid (an issue not assigned, a rate not above zero), 3 when it cannot run
here (it needs root, for the namespaces).

Usage: python bench/several_machines.py [--runs N] [--json]   (root: namespaces)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from verdict import Invalid, Target, Verdict, names, ratio_of, value_problems

from paperclip.chaos.db import settled_issues, unfinished_runs
from paperclip.chaos.workload import WorkItem, Workload
from tests.support.machines import Cluster, available
from tests.support.processes import wait_until


def client(cluster: Cluster, index: int) -> httpx.Client:
    return httpx.Client(
        base_url=f"{cluster.url(index)}/api",
        headers={"authorization": f"Bearer {cluster.key}"},
        timeout=30,
        trust_env=False,
    )


def healthy(cluster: Cluster, index: int) -> bool:
    try:
        with client(cluster, index) as api:
            return api.get("/health").status_code == 200
    except httpx.HTTPError:
        return False


def connected(cluster: Cluster) -> int:
    total = 0
    for index in range(len(cluster.replicas)):
        try:
            with client(cluster, index) as api:
                total += api.get("/health").json()["runners"]["connected_here"]
        except (httpx.HTTPError, ValueError, KeyError):
            pass
    return total


def phase(cluster: Cluster, workload: Workload, items: list[WorkItem], replicas: int) -> float:
    """Runs per second: the items assigned at once, through the live replicas in turn."""
    url, company = cluster.postgres.url, workload.company_id
    started = time.perf_counter()
    refused = []
    for n, item in enumerate(items):
        with client(cluster, n % replicas) as api:
            if not workload.assign(api, item):
                refused.append(item.issue_id)
    if refused:
        raise Invalid(f"{replicas} replica(s): issues not assigned: {names(refused)}")
    wanted = {item.issue_id for item in items}

    def done() -> bool:
        settled = asyncio.run(settled_issues(url, company))
        return wanted <= settled.keys() and asyncio.run(unfinished_runs(url, company)) == 0

    wait_until(done, 600, 0.1, f"{len(items)} runs with {replicas} replica(s)")
    return len(items) / (time.perf_counter() - started)


def bench(runs: int, folder: Path) -> dict[str, object]:
    cluster = Cluster(folder, replicas=2, runners=2, env={"PAPERCLIP_LEASE_SECONDS": "5"})
    try:
        cluster.start()
        wait_until(lambda: all(healthy(cluster, i) for i in (0, 1)), 120, 0.3, "the replicas")
        workload = Workload(2 * runs, cluster.script_dir, pause=0.0, comments=1)
        with client(cluster, 0) as api:
            workload.create(api)
        # One replica: the other stopped before any runner dials.
        cluster.control_planes[1].stop()
        cluster.start_runners()
        wait_until(lambda: connected(cluster) == 2, 60, 0.3, "the runners, on one replica")
        one = phase(cluster, workload, workload.items[:runs], 1)
        # Two replicas: the second started, each runner dialling its own first.
        cluster.control_planes[1].start()
        wait_until(lambda: healthy(cluster, 1), 120, 0.3, "the second replica")
        for runner in cluster.runners:
            runner.stop()
            runner.start()
        wait_until(lambda: connected(cluster) == 2, 60, 0.3, "the runners, on two replicas")
        two = phase(cluster, workload, workload.items[runs:], 2)
    finally:
        cluster.stop()
    return {
        "runs_per_phase": runs,
        "runs_per_second_one_replica": round(one, 2),
        "runs_per_second_two_replicas": round(two, 2),
        "ratio": round(ratio_of(two, one), 2),
    }


def judge(result: dict[str, float], problems: list[str]) -> Verdict:
    """Reported only (no target): valid when both phases settled every run they assigned."""
    rates = [result.get(f"runs_per_second_{n}", 0.0) for n in ("one_replica", "two_replicas")]
    return Verdict(
        "several_machines",
        [
            Target(
                "runs per second, two replicas",
                f"{rates[1]}/s",
                f"{rates[0]}/s with one",
                result.get("ratio"),
            )
        ],
        problems + value_problems("runs per second, one then two replicas", rates, 2),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs in each phase")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    why = available()
    if why is not None:
        verdict = Verdict("several_machines", unavailable=why)
        if args.json:
            print(json.dumps({"verdict": verdict.as_json()}))
        verdict.announce()
        return verdict.exit_code
    folder = Path(tempfile.mkdtemp(prefix="paperclip-bench-machines-", dir="/var/tmp"))
    folder.chmod(0o755)
    problems: list[str] = []
    try:
        result = bench(args.runs, folder)
    except Invalid as exc:
        result, problems = {}, exc.problems
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    verdict = judge(result, problems)
    if args.json:
        print(json.dumps({**result, "verdict": verdict.as_json()}))
    elif result:
        print(
            f"{args.runs} runs: {result['runs_per_second_one_replica']} runs/s with one replica, "
            f"{result['runs_per_second_two_replicas']} with two (x{result['ratio']})"
        )
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    sys.exit(main())
