"""A control plane killed at each named moment of a run's write path: nothing lost, nothing twice.

The control plane is armed with one failpoint (``PAPERCLIP_FAILPOINTS``), dies
there by SIGKILL, and starts again unarmed; the runner (its own process)
keeps the turn going and the run ends once, with each effect once.
"""

from __future__ import annotations

import signal
import uuid

import pytest

from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def one_comment_then_finish(body: str, answer: str) -> dict:
    return {
        "turns": [
            [
                {"call_tool": {"name": "post_comment", "arguments": {"body": body}}},
                {"message": answer},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "ok"},
                    }
                },
            ]
        ]
    }


def killed_at(stack, point: str, script: dict) -> dict:
    """Start the control plane armed at ``point``, run ``script`` until it dies there, restart it."""
    stack.extra_env["PAPERCLIP_FAILPOINTS"] = f"{point}=kill"
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    assert stack.servers[0].proc.wait(90) == -signal.SIGKILL, stack.servers[0].tail()
    assert f"failpoint {point} fired" in stack.servers[0].tail(200)
    stack.extra_env.pop("PAPERCLIP_FAILPOINTS")
    stack.start_server()  # same port: the runner reconnects and the run is adopted
    return ctx


def agent_comments(stack, ctx) -> list[str]:
    return [c["body"] for c in stack.comments(ctx) if c["author_agent_id"]]


def assert_once(stack, ctx, body: str, answer: str) -> None:
    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    wait_until(
        lambda: next((r for r in stack.runs(ctx) if r["presentation"]), None),
        60,
        message="the answer presented",
    )
    assert agent_comments(stack, ctx) == [body, answer]
    calls = query(
        stack.database_url,
        "SELECT tool, status FROM tool_calls WHERE run_id = $1 ORDER BY id",
        uuid.UUID(run["id"]),
    )
    assert [(c["tool"], c["status"]) for c in calls] == [
        ("post_comment", "settled"),
        ("finish", "settled"),
    ]


def test_killed_after_the_effect_committed_before_the_reply_the_tool_runs_once(stack):
    script = one_comment_then_finish("Written once.", "Done after the reply was lost.")
    ctx = killed_at(stack, "engine.tool.settled.before_reply", script)
    assert_once(stack, ctx, "Written once.", "Done after the reply was lost.")


def test_killed_after_admission_before_dispatch_the_tool_runs_once(stack):
    script = one_comment_then_finish("Admitted, then run once.", "Done after the admission.")
    ctx = killed_at(stack, "engine.tool.admitted.before_dispatch", script)
    assert_once(stack, ctx, "Admitted, then run once.", "Done after the admission.")


def test_killed_after_the_status_decision_the_answer_is_presented_once(stack):
    script = one_comment_then_finish("Before the decision.", "The answer, presented once.")
    ctx = killed_at(stack, "engine.status_decision.before_presentation", script)
    assert_once(stack, ctx, "Before the decision.", "The answer, presented once.")
