"""Seed 004 with OpenCode: a steer acknowledged but unread, then two restarts, is read once.

Real processes: the control plane, the runner and the fake OpenCode server.
OpenCode records a steer (a queued prompt) as a user message the moment it is
queued; the model reads it only when it starts answering it, which the
ledger reads (an assistant ``message.updated`` with that ``parentID``). The
first turn holds with a steer queued; the runner and the server are
SIGKILLed; the next turn (the same session, resumed) carries the steer; once
its own prompt is being answered, a second SIGKILL's next turn carries nothing.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.engine.test_steer_restarts import STEER, running_turn, turn_rows
from tests.providers.lost_runner import fake_agent_for, kill_runner_and_fake
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

MODULE = "paperclip_opencode_testing.fake_server"
FAKE = [sys.executable, "-m", MODULE]


def held(reached) -> list[dict]:
    """A model step (its answer starts: the prompt is read), then a gate that never opens."""
    return [
        {"call_tool": {"name": "get_task_context", "arguments": {}}},
        {"touch_file": str(reached)},
        {"wait_for_file": str(reached) + ".never", "timeout": 300},
    ]


def prompts_answered(stack, ctx, run_id: str) -> list[int]:
    """The turns in which the model started answering a prompt, in log order."""
    return [
        e["turn"]
        for e in stack.events(ctx, run_id)
        if e["type"] == "message.updated"
        and e["payload"]["info"].get("role") == "assistant"
        and e["payload"]["info"].get("parentID")
    ]


def follow_up(stack, ctx, run_id: str) -> str:
    """Send STEER into the running turn (OpenCode's delivery: a follow-up); its acknowledgement."""
    company = ctx["company"]["id"]
    with stack.api() as api:
        comment = api.post(
            f"/companies/{company}/issues/{ctx['issue']['id']}/comments", json={"body": STEER}
        ).json()
        sent = api.post(
            f"/companies/{company}/runs/{run_id}/steer", json={"comment_id": comment["id"]}
        )
        assert sent.status_code == 202 and sent.json()["delivery"] == "follow_up", sent.text
    wait_until(
        lambda: any(
            e["type"] == "steering_acknowledgement" and e["payload"]["message_id"] == comment["id"]
            for e in stack.events(ctx, run_id)
        ),
        30,
        message="the provider's acknowledgement in the run log",
    )
    return comment["id"]


def test_an_unread_opencode_steer_is_delivered_once_across_two_restarts(stack):
    stack.start_server()
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    argv = [*FAKE, "--script-dir", str(stack.script_dir), "--log", str(stack.fake_log)]
    launch = {"opencode": {"fake": argv}}
    stack.start_runner(launch=launch)
    first, second = stack.tmp / "first", stack.tmp / "second"
    finish = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}}
    script = {"turns": [held(first), held(second), [finish, {"message": "Done."}]]}
    ctx = fake_agent_for(stack, "opencode", script)
    stack.assign(ctx)
    wait_until(first.exists, 60, message="the first turn held")
    run_id = stack.runs(ctx)[0]["id"]
    running_turn(stack, ctx, run_id)
    follow_up(stack, ctx, run_id)  # queued behind the running prompt: not read yet

    kill_runner_and_fake(stack, MODULE, launch)
    wait_until(second.exists, 90, message="the second turn held")
    wait_until(
        lambda: 2 in prompts_answered(stack, ctx, run_id),
        30,
        message="the second turn's prompt being answered, in the log",
    )
    kill_runner_and_fake(stack, MODULE, launch)  # a later restart

    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), (run, stack.runner.tail())
    rows = turn_rows(stack, run_id)
    assert [(t["number"], t["kind"]) for t in rows] == [
        (1, "initial"),
        (2, "continuation"),
        (3, "continuation"),
    ]
    assert rows[1]["input"]["prompt"].count(STEER) == 1
    assert [m["body"] for m in rows[1]["input"]["steeredMessages"]] == [STEER]
    assert rows[2]["input"]["steeredMessages"] == []
    assert STEER not in rows[2]["input"]["prompt"]
    # OpenCode stored the follow-up when it was queued: the resumed session dropped it, once
    # (the continuation carries it), so the model is not given it twice.
    received = [json.loads(line) for line in stack.fake_log.read_text().splitlines()]
    deleted = [
        r["path"]
        for r in received
        if r.get("type") == "received" and r["method"] == "DELETE" and "/message/" in r["path"]
    ]
    assert len(deleted) == 1, deleted
