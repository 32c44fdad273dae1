"""Every benchmark, one after the other, and one table of how each went.

Each benchmark runs as its own process (``python bench/<name>.py ... --json``),
as it runs alone; its verdict (``verdict.py``) becomes rows of one table:
bench, figure, baseline, ratio, target, and pass, fail, invalid (the
measurement cannot be trusted: a sample missing, not above zero, unpaired or
paired twice), reported (no target) or unavailable (it cannot run here). A
benchmark that ends without a verdict, or with an exit code its verdict does
not explain, is invalid too.

Usage:
  python bench/run_all.py                       every benchmark at its own sizes
  python bench/run_all.py --quick               small sizes: a smoke run
  python bench/run_all.py wake_latency scale    only these
  python bench/run_all.py --skip several_machines --set wake_latency="--wakes 50"
  python bench/run_all.py --json                one JSON object, no table

Exits 2 when a benchmark's measurement is invalid, else 1 when one missed a
target, else 0 (a benchmark that cannot run here does neither).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verdict import INVALID, MISSED, OK, UNAVAILABLE

HERE = Path(__file__).resolve().parent

QUICK: dict[str, list[str]] = {
    "prompt_render": ["--repeats", "3"],
    "wake_latency": ["--wakes", "20"],
    "budget_admission": ["--wakes", "10"],
    "tool_roundtrip": ["--calls", "20"],
    "issue_view": ["--seconds", "1", "--rounds", "1"],
    "streams": ["--streams", "100"],
    "recovery_pass": ["--history", "10000", "--rounds", "1", "--pending", "100"],
    "retention": ["--history", "20000", "--rounds", "1", "--pending", "100"],
    "scale": ["--runs", "10", "--small", "4", "--calls", "2"],
    "several_machines": ["--runs", "4"],
    "routine_latency": ["--routines", "3", "--minutes", "1"],
}
"""Every benchmark, in the order they run (the short ones first), and its quick sizes."""

CODES = {"pass": OK, "fail": MISSED, "invalid": INVALID, "unavailable": UNAVAILABLE}


@dataclass
class Outcome:
    """How one benchmark's process ended, and its verdict (its ``--json`` answer's)."""

    bench: str
    argv: list[str]
    exit_code: int | None
    seconds: float
    verdict: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return str(self.verdict.get("status", "invalid"))

    @property
    def problems(self) -> list[str]:
        return list(self.verdict.get("problems", []))


def judge(
    bench: str, argv: list[str], exit_code: int | None, stdout: str, stderr: str, seconds: float
) -> Outcome:
    """The benchmark's verdict, from the last JSON line of its output; invalid when there is
    none, or when its exit code is not the one its verdict calls for."""
    outcome = Outcome(bench, argv, exit_code, seconds)
    for line in reversed(stdout.splitlines()):
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict) and isinstance(answer.get("verdict"), dict):
            outcome.verdict = answer["verdict"]
            break
    said = [line for line in stderr.splitlines() if line.strip()][-3:]
    if not outcome.verdict:
        why = "did not finish in time" if exit_code is None else f"exited {exit_code}"
        outcome.verdict = {
            "status": "invalid",
            "rows": [],
            "problems": [f"{why} without a verdict" + (f": {' | '.join(said)}" if said else "")],
        }
    elif exit_code != CODES.get(outcome.status):
        outcome.verdict = {
            **outcome.verdict,
            "status": "invalid",
            "problems": [
                *outcome.problems,
                f"exited {exit_code}, but its verdict says {outcome.status}",
            ],
        }
    return outcome


def run_one(
    bench: str, args: list[str], script: Path | None = None, timeout: float | None = None
) -> Outcome:
    """Run one benchmark alone, as a process of its own, and judge how it ended."""
    argv = [sys.executable, str(script or HERE / f"{bench}.py"), *args, "--json"]
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        code, stdout = None, _text(exc.stdout)
        stderr = _text(exc.stderr)
    return judge(bench, argv[2:], code, stdout, stderr, time.monotonic() - started)


def _text(output: bytes | str | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def rows(outcomes: list[Outcome]) -> list[list[str]]:
    """The table's rows: one per figure of each benchmark."""
    table = []
    for outcome in outcomes:
        figures = outcome.verdict.get("rows") or [{"name": "", "figure": "-"}]
        for row in figures:
            if outcome.status in ("invalid", "unavailable"):
                status = outcome.status
            else:
                status = {True: "pass", False: "fail", None: "reported"}[row.get("met")]
            ratio = row.get("ratio")
            table.append(
                [
                    outcome.bench + (f": {row['name']}" if row.get("name") else ""),
                    row.get("figure") or "-",
                    row.get("baseline") or "-",
                    f"{ratio:.2f}x" if isinstance(ratio, int | float) else "-",
                    row.get("target") or "-",
                    status,
                ]
            )
    return table


def render(outcomes: list[Outcome]) -> str:
    head = ["bench", "figure", "baseline", "ratio", "target", "status"]
    table = [head, *rows(outcomes)]
    widths = [max(len(line[i]) for line in table) for i in range(len(head))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in table
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for outcome in outcomes:
        for problem in outcome.problems:
            lines.append(f"{outcome.bench}: invalid: {problem}")
        if outcome.status == "unavailable":
            lines.append(f"{outcome.bench}: cannot run here: {outcome.verdict.get('unavailable')}")
    return "\n".join(lines)


def exit_code(outcomes: list[Outcome]) -> int:
    statuses = {outcome.status for outcome in outcomes}
    return INVALID if "invalid" in statuses else MISSED if "fail" in statuses else OK


def plan(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """Which benchmarks run, in order, with which arguments."""
    unknown = [name for name in (*args.benches, *args.skip) if name not in QUICK]
    sizes = {}
    for setting in args.set:
        name, _, given = setting.partition("=")
        if name not in QUICK:
            unknown.append(name)
        sizes[name] = shlex.split(given)
    if unknown:
        raise SystemExit(f"unknown benchmark(s): {', '.join(unknown)} (known: {', '.join(QUICK)})")
    chosen = [name for name in QUICK if name in (args.benches or QUICK) and name not in args.skip]
    return [(name, (QUICK[name] if args.quick else []) + sizes.get(name, [])) for name in chosen]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "benches", nargs="*", help=f"the benchmarks to run (default: all): {', '.join(QUICK)}"
    )
    parser.add_argument("--skip", action="append", default=[], help="a benchmark not to run")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar='NAME="ARGS"',
        help='arguments for one benchmark, after --quick\'s (--set wake_latency="--wakes 50")',
    )
    parser.add_argument("--timeout", type=float, help="seconds each benchmark may take")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    outcomes = []
    for bench, bench_args in plan(args):
        print(f"{bench} {shlex.join(bench_args)}".rstrip() + " ...", file=sys.stderr, flush=True)
        outcome = run_one(bench, bench_args, timeout=args.timeout)
        print(f"  {outcome.status} in {outcome.seconds:.0f} s", file=sys.stderr, flush=True)
        outcomes.append(outcome)
    code = exit_code(outcomes)
    if args.json:
        answer = [
            {
                "bench": o.bench,
                "argv": o.argv,
                "exit_code": o.exit_code,
                "seconds": round(o.seconds, 1),
                "verdict": o.verdict,
            }
            for o in outcomes
        ]
        print(json.dumps({"benches": answer, "exit_code": code}))
    else:
        print(render(outcomes))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
