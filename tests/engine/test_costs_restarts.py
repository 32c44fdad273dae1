"""A usage acknowledged before a SIGKILL is counted once: real processes.

The control plane, the runner and the fake Codex app-server are separate OS
processes. The first turn's model response reports its usage; once the
control plane has recorded it (the runner's report acknowledged), the runner
or the control plane is killed. The run goes on in a next turn that resumes
the thread, whose first notification is that same usage again, as Codex
replays a resumed thread's last usage: it is not counted twice.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest

from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

PRICE = {
    "input_per_million_micros": 2_000_000,
    "cached_input_per_million_micros": 1_000_000,
    "output_per_million_micros": 3_000_000,
}
"""Whole micro-units per token, so each cost is exact."""

BEFORE = {
    "input_tokens": 1200,
    "cached_input_tokens": 300,
    "output_tokens": 40,
    "reasoning_tokens": 8,
}
AFTER = [
    {"input_tokens": 1500, "cached_input_tokens": 1200, "output_tokens": 25, "reasoning_tokens": 0},
    {"input_tokens": 1600, "cached_input_tokens": 1500, "output_tokens": 30, "reasoning_tokens": 4},
]
COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")


def priced(counts: dict[str, int]) -> int:
    fresh = counts["input_tokens"] - counts["cached_input_tokens"]
    return fresh * 2 + counts["cached_input_tokens"] * 1 + counts["output_tokens"] * 3


def script(stack, name: str) -> tuple[dict, Path]:
    """Turn 1: one response with usage, then a gate that never opens; turn 2 finishes."""
    reached = stack.tmp / f"{name}-reached"
    return {
        "turns": [
            [
                {
                    "call_tool": {
                        "name": "post_comment",
                        "arguments": {"body": "Before the loss."},
                    },
                    "usage": BEFORE,
                },
                {"touch_file": str(reached)},
                {"wait_for_file": str(stack.tmp / f"{name}-never"), "timeout": 300},
            ],
            [
                {"message": "Continuing where I left off.", "usage": AFTER[0]},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "finished after the loss"},
                    },
                    "usage": AFTER[1],
                },
            ],
        ]
    }, reached


def cost_rows(stack, run_id: str) -> list[dict]:
    return query(
        stack.database_url,
        "SELECT turn, key, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, "
        "cost_micros, cost_source FROM cost_events WHERE run_id = $1 ORDER BY id",
        uuid.UUID(run_id),
    )


def started_with_usage_recorded(stack) -> tuple[dict, dict]:
    """The agent's run, once its first response's usage is recorded and it waits at its gate."""
    body, reached = script(stack, uuid.uuid4().hex[:6])
    ctx = stack.setup_issue(body)
    with stack.api() as api:
        assert api.put(f"/prices/{ctx['model']}", json=PRICE).status_code == 200
    stack.assign(ctx)
    wait_until(reached.exists, 60, message="the first turn at its gate")
    run = wait_until(lambda: next(iter(stack.runs(ctx)), None), 30, message="the run")
    wait_until(lambda: cost_rows(stack, run["id"]), 30, message="the first usage recorded")
    return ctx, run


def assert_counted_once(stack, ctx, run_id: str) -> None:
    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", run
    rows = cost_rows(stack, run_id)
    counts = [{k: r[k] for k in COUNTS} for r in rows]
    assert counts == [BEFORE, *AFTER], rows  # the replayed one not again
    assert [r["turn"] for r in rows] == [1, 2, 2]
    assert all(r["cost_source"] == "priced" for r in rows)
    assert [r["cost_micros"] for r in rows] == [priced(c) for c in counts]
    with stack.api() as api:
        usage = api.get(f"/companies/{ctx['company']['id']}/runs/{run_id}").json()["usage"]
    assert {k: usage[k] for k in COUNTS} == {k: sum(c[k] for c in counts) for k in COUNTS}
    assert usage["cost_micros"] == sum(priced(c) for c in counts)


def test_a_usage_acknowledged_before_a_sigkill_of_the_runner_is_counted_once(stack):
    stack.start_server()
    stack.start_runner()
    ctx, run = started_with_usage_recorded(stack)

    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    stack.start_runner()  # its next process resumes the thread, which replays the usage

    assert_counted_once(stack, ctx, run["id"])


def test_a_usage_acknowledged_before_a_sigkill_of_both_processes_is_counted_once(stack):
    """The control plane and the runner (with its provider) at once: the new control plane
    adopts the run, the new runner resumes the thread."""
    stack.start_server()
    stack.start_runner()
    ctx, run = started_with_usage_recorded(stack)

    stack.servers[0].kill()
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    stack.start_server()
    stack.start_runner()

    assert_counted_once(stack, ctx, run["id"])
