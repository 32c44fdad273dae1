"""The CI smoke of ``paperclip chaos``: a fixed seed, every fault kind and every named point.

It runs the command as a user does (its own embedded PostgreSQL, replicas,
a runner behind link proxies, the fake Codex provider) and fails on any
violation it reports: a failpoint the code does not survive (say, a crash
between the status decision and the presentation, before presentation
recovery existed) shows up here as ``answer_not_presented``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

SMOKE = [
    "--runs", "4",
    "--pause", "2",
    "--interval", "5",
    "--seed", "7",
    "--arm-chance", "1",
    "--arm-spread", "1",
    "--arm-timeout", "20",
    "--timeout", "180",
    "--settle", "60",
]  # fmt: skip
"""The smoke's command line, as docs/reliability.md records it."""


@pytest.mark.timeout(420)
def test_the_chaos_smoke_ends_with_every_run_settled_and_no_violation(tmp_path):
    logs = tmp_path / "logs"
    out = subprocess.run(
        [sys.executable, "-m", "paperclip", "chaos", *SMOKE, "--json", "--keep", str(logs)],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert out.stdout, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["violations"] == [], (result, logs)
    assert out.returncode == 0
    assert result["runs"].get("succeeded", 0) + result["runs"].get("held", 0) == 4, result["runs"]
    faults = result["faults"]
    assert faults["total"] >= 2, faults
    assert len(faults["by_kind"]) >= 2, faults  # a mix, not one kind over and over
    assert sum(result["failpoints"]["fired"].values()) >= 1, result["failpoints"]
