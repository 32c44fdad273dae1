"""SIGKILL of the control plane in the middle of a turn: the runner reconnects and the turn completes.

Nothing is lost or repeated: no run event twice, no write tool applied twice
(receipts), and every journaled tool input ends with a result.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from tests.support.db import HeldLock, query
from tests.support.processes import lines_with, wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def assert_log_is_clean(stack, ctx, run):
    events = stack.events(ctx, run["id"])
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    keys = Counter((e["source_instance"], e["source_seq"]) for e in events)
    assert max(keys.values()) == 1
    items = Counter(
        e["payload"]["item"]["id"]
        for e in events
        if e["type"] == "item/completed" and "item" in e["payload"]
    )
    assert items and max(items.values()) == 1, items
    assert [e["type"] for e in events].count("turn/completed") == 1
    return events


def journal(stack, run_id):
    return query(
        stack.database_url,
        "SELECT tool, status, admitted_epoch, settled_epoch, is_error FROM tool_calls "
        "WHERE run_id = $1 ORDER BY id",
        __import__("uuid").UUID(run_id),
    )


def test_sigkill_between_two_tool_calls(stack):
    gate_reached, gate = stack.tmp / "reached", stack.tmp / "go"
    script = {
        "turns": [
            [
                {"call_tool": {"name": "get_task_context", "arguments": {}}},
                {"call_tool": {"name": "post_comment", "arguments": {"body": "first"}}},
                {"touch_file": str(gate_reached)},
                {"wait_for_file": str(gate), "timeout": 120},
                {"call_tool": {"name": "post_comment", "arguments": {"body": "second"}}},
                {"message": "both written"},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "ok"},
                    }
                },
            ]
        ]
    }
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    wait_until(gate_reached.exists, 60, message="the fake reached the gate")

    retries = lines_with(stack.runner.log_path, "; retrying")
    stack.servers[0].kill()
    gate.touch()  # the second call is made while no control plane answers
    wait_until(
        lambda: lines_with(stack.runner.log_path, "; retrying") > retries,
        30,
        message="the runner going on without a control plane",
    )
    stack.start_server()

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", stack.runner.tail()
    assert run["controller_epoch"] >= 2  # adopted by the restarted control plane
    bodies = wait_until(
        lambda: (b := [c["body"] for c in stack.comments(ctx) if c["author_agent_id"]])[2:] and b
    )
    assert bodies == ["first", "second", "both written"]  # the last: the presented answer
    assert_log_is_clean(stack, ctx, run)
    calls = journal(stack, run["id"])
    assert [c["tool"] for c in calls] == [
        "get_task_context",
        "post_comment",
        "post_comment",
        "finish",
    ]
    assert all(c["status"] == "settled" and not c["is_error"] for c in calls)


def test_sigkill_while_a_tool_call_is_in_flight(stack):
    script = {
        "turns": [
            [
                {"call_tool": {"name": "get_task_context", "arguments": {}}},
                {"call_tool": {"name": "post_comment", "arguments": {"body": "exactly once"}}},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "needs_review", "summary": "ok"},
                    }
                },
            ]
        ]
    }
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(script)
    # Writers of comments wait: the post_comment call is admitted, then stuck mid-transaction.
    lock = HeldLock(stack.database_url, "LOCK TABLE comments IN EXCLUSIVE MODE").__enter__()
    try:
        stack.assign(ctx)

        def admitted():
            rows = query(
                stack.database_url,
                "SELECT c.status FROM tool_calls c JOIN runs r ON r.id = c.run_id "
                "WHERE r.issue_id = $1 AND c.tool = 'post_comment'",
                __import__("uuid").UUID(ctx["issue"]["id"]),
            )
            return rows and rows[0]["status"] == "pending"

        wait_until(admitted, 60, message="post_comment journaled and pending")
        time.sleep(0.3)  # the dispatch is inside its transaction, waiting for the lock
        stack.servers[0].kill()
    finally:
        lock.release()
    stack.start_server()

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", stack.runner.tail()
    bodies = [c["body"] for c in stack.comments(ctx) if c["author_agent_id"]]
    assert bodies == ["exactly once"]
    assert_log_is_clean(stack, ctx, run)
    calls = journal(stack, run["id"])
    post = next(c for c in calls if c["tool"] == "post_comment")
    # admitted by the killed controller, settled by the one that adopted the run
    assert (
        post["status"] == "settled" and post["admitted_epoch"] == 1 and post["settled_epoch"] >= 2
    )
    assert all(c["status"] == "settled" for c in calls)
    with stack.api() as api:
        issue = api.get(f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}").json()
    assert issue["status"] == "in_review"
