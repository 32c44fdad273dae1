"""Many runs at once through two runners and the fake provider: all succeed, latency and memory bounded.

For each size (20, then 200 runs by default) on a fresh control plane:

1. ``paperclip serve --no-runner`` (embedded PostgreSQL in a temp dir, or
   PAPERCLIP_DATABASE_URL) and two ``paperclip runner`` processes, each with
   its own credential, offering the fake Codex app-server
   (``paperclip_codex_testing.fake_app_server``) as a launch profile: real OS
   processes, one provider process per run, as in production.
2. One agent per run (its model names its script) and one issue; the script
   makes ``--calls`` ``report_progress`` tool calls (journaled write tools,
   each an MCP call from the provider to its runner, then over the runner's
   WebSocket to the control plane and back), says it is done and calls
   ``finish``.
3. All issues are assigned at once; the benchmark waits until every run has
   ended, then checks: every run ``succeeded``, every tool call settled
   without error, both runners used.

Figures: tool-call latency as the provider sees it (each call's duration
from the fake's log: MCP request to MCP answer) p50 and p99 and their ratio
(target at most 5x, at the large size); the control plane's peak resident
memory (``VmHWM``) at each size and their ratio (target at most 3x); wall
time. A printed table, and ``--json`` prints one object.

Each call is a sample found by its identity in the fakes' logs (its tool and
the summary that names its run and step): every call of every script exactly
once, with a duration above zero, or the measurement is invalid.

Usage: python bench/scale.py [--runs 200] [--small 20] [--calls 5] [--json]
Exits 1 when a run fails or a target is missed, 2 when the measurement is invalid.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import connect, control_plane, percentile
from verdict import Target, Verdict, names, ratio_of, sample_problems

from tests.support.processes import RunnerProcess

LATENCY_TARGET = 5.0
MEMORY_TARGET = 3.0
RUNNERS = 2
FAKE_PROFILE = "bench-fake"


def script(label: str, calls: int) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {"call_tool": {"name": "report_progress", "arguments": {"summary": f"{label} step {i}"}}}
        for i in range(calls)
    ]
    steps += [
        {"message": f"Run {label} is done."},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": label}}},
    ]
    return {"turns": [steps]}


def launch(script_dir: Path, log: Path) -> str:
    """``PAPERCLIP_RUNNER_LAUNCH``: the fake app-server, each agent's model naming its script."""
    argv = [sys.executable, "-m", "paperclip_codex_testing.fake_app_server"]
    argv += ["--script-dir", str(script_dir), "--log", str(log)]
    return json.dumps({"codex": {FAKE_PROFILE: argv}})


def create_work(base: str, runs: int, calls: int, script_dir: Path) -> tuple[str, list[str]]:
    """A company, an agent and an issue per run; the issues, not yet assigned."""
    with httpx.Client(base_url=f"{base}/api", timeout=60) as api:
        company = api.post("/companies", json={"name": "Scale"}).raise_for_status().json()
        issues = []
        for n in range(runs):
            label = label_of(n)
            model = f"scale-{label}"
            (script_dir / f"{model}.json").write_text(json.dumps(script(label, calls)))
            agent = api.post(
                f"/companies/{company['id']}/agents",
                json={
                    "name": f"agent-{label}",
                    "provider": "codex",
                    "provider_config": {"launch": FAKE_PROFILE, "model": model},
                },
            ).raise_for_status()
            issue = api.post(
                f"/companies/{company['id']}/issues",
                json={"title": f"Scale {label}", "description": "Report progress, then finish."},
            ).raise_for_status()
            issues.append(f"{issue.json()['id']} {agent.json()['id']}")
    return company["id"], issues


async def assign_all(base: str, company_id: str, issues: list[str]) -> None:
    """Every issue assigned at once (8 requests in flight): the runs start together."""
    limit = asyncio.Semaphore(8)
    async with httpx.AsyncClient(base_url=f"{base}/api", timeout=60) as api:

        async def assign(pair: str) -> None:
            issue_id, agent_id = pair.split()
            async with limit:
                r = await api.patch(
                    f"/companies/{company_id}/issues/{issue_id}",
                    json={"assignee_agent_id": agent_id},
                )
                r.raise_for_status()

        await asyncio.gather(*(assign(p) for p in issues))


async def wait_for_runs(database_url: str, runs: int, seconds: float) -> dict[str, int]:
    """Poll until ``runs`` runs have ended (or ``seconds`` passed): their count by status."""
    conn = await connect(database_url)
    deadline = time.monotonic() + seconds
    try:
        while True:
            rows = await conn.fetch("SELECT status, count(*) AS n FROM runs GROUP BY status")
            counts = {r["status"]: r["n"] for r in rows}
            ended = sum(n for s, n in counts.items() if s in ("succeeded", "failed", "cancelled"))
            if ended >= runs or time.monotonic() > deadline:
                return counts
            await asyncio.sleep(0.5)
    finally:
        await conn.close()


async def wait_for_runners(database_url: str, count: int, seconds: float = 120) -> None:
    """Until ``count`` runners have said hello (so the runs can spread over them)."""
    conn = await connect(database_url)
    deadline = time.monotonic() + seconds
    try:
        while (
            await conn.fetchval("SELECT count(*) FROM runners WHERE instance IS NOT NULL") < count
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"fewer than {count} runners connected")
            await asyncio.sleep(0.2)
    finally:
        await conn.close()


def cpu_seconds(proc: psutil.Process, *, children: bool = False) -> float:
    """CPU time of a process (user + system), or of its children that have exited."""
    times = proc.cpu_times()
    return times.children_user + times.children_system if children else times.user + times.system


def providers_cpu(hosts: list[psutil.Process]) -> float:
    """CPU time of the runners' provider processes: those running, and those that ended."""
    total = 0.0
    for host in hosts:
        total += cpu_seconds(host, children=True)
        for child in host.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                total += cpu_seconds(child)
    return total


async def database_checks(database_url: str) -> dict[str, int]:
    conn = await connect(database_url)
    try:
        row = await conn.fetchrow(
            "SELECT count(*) AS calls,"
            " count(*) FILTER (WHERE status = 'pending') AS pending,"
            " count(*) FILTER (WHERE is_error) AS errors FROM tool_calls"
        )
        runners = await conn.fetchval("SELECT count(DISTINCT runner_id) FROM runs")
        return {**dict(row), "runners_used": runners}
    finally:
        await conn.close()


def peak_rss_mb(pid: int) -> float:
    """The process's resident high-water mark (``VmHWM``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def label_of(n: int) -> str:
    return f"s{n:04d}"


def expected_calls(runs: int, calls: int) -> list[tuple[str, str]]:
    """Every call the runs' scripts make, by (tool, summary): what the fakes' logs must hold."""
    return [
        key
        for n in range(runs)
        for key in (
            *(("report_progress", f"{label_of(n)} step {i}") for i in range(calls)),
            ("finish", label_of(n)),
        )
    ]


def provider_calls(
    logs: list[Path],
) -> tuple[dict[tuple[str, str], float | None], set[tuple[str, str]], list[str]]:
    """Each call's duration (ms) in the fakes' logs, by (tool, summary); those that failed (an
    error or a refusal: what the provider read); and the calls logged twice."""
    durations: dict[tuple[str, str], float | None] = {}
    failed: set[tuple[str, str]] = set()
    twice: list[str] = []
    for log in logs:
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("type") != "tool_result":
                continue
            key = (str(entry.get("name")), str((entry.get("arguments") or {}).get("summary")))
            if key in durations:
                twice.append(f"{key[0]} {key[1]!r}")
            duration = entry.get("duration_ms")
            durations[key] = None if duration is None else float(duration)
            if not entry["ok"] or entry.get("isError"):
                failed.add(key)
    return durations, failed, [f"tool calls logged twice: {names(twice)}"] if twice else []


def one_size(runs: int, calls: int, timeout: float) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="paperclip-scale-", dir="/var/tmp") as tmp,
        control_plane() as cp,
    ):
        folder = Path(tmp)
        script_dir = folder / "scripts"
        script_dir.mkdir()
        logs = [folder / f"fake{i}.log" for i in range(RUNNERS)]
        runners = [
            RunnerProcess(
                [cp.url],
                cp.runner_credential(),
                folder / f"runner{i}",
                folder / f"runner{i}.log",
                env={"PAPERCLIP_RUNNER_LAUNCH": launch(script_dir, logs[i])},
            ).start()
            for i in range(RUNNERS)
        ]
        try:
            company_id, issues = create_work(cp.url, runs, calls, script_dir)
            asyncio.run(wait_for_runners(cp.database_url, RUNNERS))
            assert cp.server.proc is not None
            server = psutil.Process(cp.server.proc.pid)
            hosts = [psutil.Process(r.proc.pid) for r in runners if r.proc is not None]
            cpu_before = [
                cpu_seconds(server),
                sum(cpu_seconds(h) for h in hosts),
                providers_cpu(hosts),
            ]
            started = time.perf_counter()
            asyncio.run(assign_all(cp.url, company_id, issues))
            counts = asyncio.run(wait_for_runs(cp.database_url, runs, timeout))
            wall = time.perf_counter() - started
            cpu = {
                "control_plane": cpu_seconds(server) - cpu_before[0],
                "runners": sum(cpu_seconds(h) for h in hosts) - cpu_before[1],
                "providers": providers_cpu(hosts) - cpu_before[2],
            }
            checks = asyncio.run(database_checks(cp.database_url))
            rss = peak_rss_mb(cp.server.proc.pid)
        finally:
            for runner in runners:
                runner.stop()
        calls_by_key, failed, problems = provider_calls([log for log in logs if log.exists()])
    expected = expected_calls(runs, calls)
    problems += sample_problems(
        f"tool calls at {runs} runs", calls_by_key, expected, count=runs * (calls + 1)
    )
    durations = [d for k, d in calls_by_key.items() if d is not None and k not in failed]
    failed_calls = len(failed)
    p50, p99 = percentile(durations, 50), percentile(durations, 99)
    succeeded = counts.get("succeeded", 0)
    return {
        "runs": runs,
        "succeeded": succeeded,
        "run_statuses": counts,
        "tool_calls": len(durations),
        "failed_tool_calls": failed_calls,
        "journal": checks,
        "latency_p50_ms": p50,
        "latency_p99_ms": p99,
        "latency_mean_ms": statistics.fmean(durations) if durations else math.nan,
        "latency_p99_over_p50": ratio_of(p99, p50),
        "peak_rss_mb": rss,
        "wall_s": wall,
        "cpu_s": cpu,
        "all_succeeded": succeeded == runs
        and failed_calls == 0
        and checks["pending"] == 0
        and checks["errors"] == 0,
        "problems": problems,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="the large size")
    parser.add_argument("--small", type=int, default=20, help="the small size (memory baseline)")
    parser.add_argument("--calls", type=int, default=5, help="report_progress calls per run")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per size")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    small = one_size(args.small, args.calls, args.timeout)
    large = one_size(args.runs, args.calls, args.timeout)
    memory_ratio = ratio_of(large["peak_rss_mb"], small["peak_rss_mb"])
    latency_ratio = large["latency_p99_over_p50"]
    problems = small.pop("problems") + large.pop("problems")
    succeeded = (
        small["all_succeeded"]
        and large["all_succeeded"]
        and large["journal"]["runners_used"] == RUNNERS
    )
    verdict = Verdict(
        "scale",
        [
            Target(
                f"{large['runs']} runs through {RUNNERS} runners: all succeed",
                f"{large['succeeded']} of {large['runs']} ({small['succeeded']} of {small['runs']})",
                f"{large['failed_tool_calls']} calls failed,"
                f" {large['journal']['runners_used']} runners used",
                None,
                f"all, on {RUNNERS} runners",
                succeeded,
            ),
            Target(
                f"tool-call latency at {large['runs']} runs, p99 / p50",
                f"{large['latency_p99_ms']:.1f} ms p99",
                f"{large['latency_p50_ms']:.1f} ms p50",
                latency_ratio,
                f"at most {LATENCY_TARGET:g}x",
                latency_ratio <= LATENCY_TARGET,
            ),
            Target(
                f"peak RSS, {large['runs']} vs {small['runs']} runs",
                f"{large['peak_rss_mb']:.1f} MB",
                f"{small['peak_rss_mb']:.1f} MB",
                memory_ratio,
                f"at most {MEMORY_TARGET:g}x",
                memory_ratio <= MEMORY_TARGET,
            ),
        ],
        problems,
    )
    ok = verdict.status == "pass"
    result = {
        "small": small,
        "large": large,
        "rss_ratio": memory_ratio,
        "latency_p99_over_p50": latency_ratio,
        "targets": {"latency_p99_over_p50": LATENCY_TARGET, "rss_ratio": MEMORY_TARGET},
        "met": ok,
        "verdict": verdict.as_json(),
    }
    if args.json:
        print(json.dumps(result))
        verdict.announce()
        return verdict.exit_code
    print(f"{'runs':>6} {'ok':>6} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'p99/p50':>8}", end="")
    print(f" {'peak RSS MB':>12} {'wall s':>7}  CPU s: control plane / runners / providers")
    for size in (small, large):
        print(
            f"{size['runs']:>6} {size['succeeded']:>6} {size['tool_calls']:>6}"
            f" {size['latency_p50_ms']:>8.1f} {size['latency_p99_ms']:>8.1f}"
            f" {size['latency_p99_over_p50']:>8.2f} {size['peak_rss_mb']:>12.1f}"
            f" {size['wall_s']:>7.1f}  {size['cpu_s']['control_plane']:.1f} /"
            f" {size['cpu_s']['runners']:.1f} / {size['cpu_s']['providers']:.1f}"
        )
    print(
        f"p99/p50 at {large['runs']} runs: {latency_ratio:.2f} (target <= {LATENCY_TARGET});"
        f" peak RSS {large['runs']} vs {small['runs']} runs: {memory_ratio:.2f}x"
        f" (target <= {MEMORY_TARGET}); runners used: {large['journal']['runners_used']};"
        f" {'met' if ok else 'NOT met'}"
    )
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
