"""``bench/run_all.py``: each benchmark's verdict becomes rows of one table, and one exit code.

The benchmarks here are tiny scripts that print a verdict and exit as told:
what is checked is how run_all reads them, never a figure.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from run_all import exit_code, judge, render, run_one
from verdict import INVALID, MISSED, OK, Target, Verdict


def script(tmp_path: Path, verdict: Verdict, code: int) -> Path:
    """A benchmark that prints ``verdict`` as its ``--json`` answer, then exits ``code``."""
    path = tmp_path / f"{verdict.bench}.py"
    answer = json.dumps({"figure": 1.0, "verdict": verdict.as_json()})
    path.write_text(
        textwrap.dedent(
            f"""
            import sys
            assert sys.argv[-1] == "--json"
            print("setting up")
            print({answer!r})
            sys.exit({code})
            """
        )
    )
    return path


ROW = Target("wake", "3.00 ms", "1.00 ms NOTIFY", 3.0, "under 5x", True)


def test_a_passing_benchmark_is_a_row_of_the_table(tmp_path):
    outcome = run_one("wake", ["--wakes", "5"], script(tmp_path, Verdict("wake", [ROW]), OK))
    assert outcome.status == "pass"
    assert outcome.argv == ["--wakes", "5", "--json"]
    table = [re.split(r" {2,}", line) for line in render([outcome]).splitlines()]
    assert table[0] == ["bench", "figure", "baseline", "ratio", "target", "status"]
    assert table[2] == ["wake: wake", "3.00 ms", "1.00 ms NOTIFY", "3.00x", "under 5x", "pass"]
    assert exit_code([outcome]) == OK


def test_an_invalid_benchmark_names_its_bad_samples_and_fails_the_run(tmp_path):
    verdict = Verdict("wake", [ROW], ["wake to start_turn: 1 of 3 samples missing: issue-c"])
    passing = run_one("ok", [], script(tmp_path, Verdict("ok", [ROW]), OK))
    invalid = run_one("wake", [], script(tmp_path, verdict, INVALID))
    assert invalid.status == "invalid"
    assert exit_code([passing, invalid]) == INVALID
    table = render([passing, invalid])
    assert "wake: invalid: wake to start_turn: 1 of 3 samples missing: issue-c" in table
    assert table.splitlines()[3].endswith("invalid")


def test_a_missed_target_fails_the_run():
    missed = Verdict("wake", [Target("wake", "9 ms", "1 ms", 9.0, "under 5x", False)])
    outcome = judge("wake", [], MISSED, json.dumps({"verdict": missed.as_json()}), "", 1.0)
    assert outcome.status == "fail"
    assert exit_code([outcome]) == MISSED


@pytest.mark.parametrize(
    ("code", "stdout", "problem"),
    [
        (1, "Traceback: nothing printed\n", "exited 1 without a verdict: it broke"),
        (None, "", "did not finish in time without a verdict: it broke"),
        (0, json.dumps({"verdict": Verdict("w", [], ["a sample missing"]).as_json()}), None),
    ],
)
def test_no_verdict_or_an_exit_code_it_does_not_explain_is_invalid(code, stdout, problem):
    outcome = judge("w", [], code, stdout, "it broke\n", 1.0)
    assert outcome.status == "invalid"
    if problem is not None:
        assert outcome.problems == [problem]
    else:
        assert outcome.problems == ["a sample missing", "exited 0, but its verdict says invalid"]


def test_every_benchmark_in_bench_is_run_and_takes_json():
    from run_all import HERE, QUICK

    benches = {path.stem for path in HERE.glob("*.py")} - {"support", "verdict", "run_all"}
    assert set(QUICK) == benches
    for name in benches:
        assert '"--json"' in (HERE / f"{name}.py").read_text(), name
