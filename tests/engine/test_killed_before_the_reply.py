"""Each seed's promise, with the control plane killed after a tool's effect commits, before its reply.

The control plane runs with ``engine.tool.settled.before_reply`` armed: it
dies by SIGKILL right after a tool call's effect and its saved result are
committed, before the reply reaches the runner; it is started again unarmed
on the same port, the runner (its own process, still holding the turn)
reconnects, and the run goes on. What must hold:

- seed 000 (completion guard): the wake's comments are read page by page
  once each, and the corrected report is accepted once;
- seed 003 (plugin tool callbacks): the tool's external effect happens once;
  the saved result is replayed, never the tool;
- seed 004 (steering): a steer the provider acknowledged is read once, and no
  continuation carries it again;
- a comment tool: ``tests/engine/test_failpoints.py`` (one comment);
- a progress report, whose reply goes out unsequenced: its saved result reaches
  the model after the restart, and its effect happened once.

Seed 002 (chat answer presentation) has no chat path in the engine yet.
"""

from __future__ import annotations

import json
import signal
import uuid

import pytest
from paperclip_hookspecs.completion import READ_CURRENT_WAKE_COMMENTS

from tests.engine.test_steer_restarts import STEER, running_turn, steer, turn_rows, user_messages
from tests.engine.test_wake_comments_on_real_runs import (
    COMMENTS,
    FINISH,
    FOLLOW_THE_CORRECTION,
    PAGES,
    calls_of,
)
from tests.support.db import query
from tests.support.processes import wait_until
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

POINT = "engine.tool.settled.before_reply"


def arm(stack, at: int = 1) -> None:
    stack.extra_env["PAPERCLIP_FAILPOINTS"] = f"{POINT}=kill@{at}"


def killed_and_restarted(stack) -> None:
    """Wait for the armed control plane to die at the point; start it again unarmed."""
    assert stack.servers[0].proc.wait(120) == -signal.SIGKILL, stack.servers[0].tail()
    assert f"failpoint {POINT} fired" in stack.servers[0].tail(300)
    stack.extra_env.pop("PAPERCLIP_FAILPOINTS")
    stack.start_server()


def run_of(stack, ctx, run_id: str, timeout: float = 120) -> dict:
    def ended():
        run = next((r for r in stack.runs(ctx) if r["id"] == run_id), None)
        return run if run and run["status"] in ("succeeded", "failed", "cancelled") else None

    return wait_until(ended, timeout, 0.3, "the run ended")


def test_seed_000_each_page_is_read_once_and_the_corrected_report_accepted_once(stack):
    arm(stack, at=2)  # the refused report's reply goes out; the first page's does not
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(
        {"turns": [[FINISH, FOLLOW_THE_CORRECTION, FINISH, {"message": "All read; done."}]]}
    )
    base = f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/comments"
    with stack.api() as api:
        ids = [
            api.post(base, json={"body": f"Comment {n}: check item {n}."}).json()["id"]
            for n in range(1, COMMENTS + 1)
        ]
    stack.assign(ctx)
    killed_and_restarted(stack)

    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert (run["status"], run["error_code"]) == ("succeeded", None), stack.runner.tail()
    finishes = calls_of(stack, run["id"], "finish")
    assert [c["is_error"] for c in finishes] == [True, False]  # refused once, accepted once
    pages = [c["result"] for c in calls_of(stack, run["id"], READ_CURRENT_WAKE_COMMENTS)]
    assert [p["page"] for p in pages] == list(range(1, PAGES + 1))
    assert [c["id"] for p in pages for c in p["comments"]] == ids
    assert all(c["status"] == "settled" for c in calls_of(stack, run["id"], "finish"))


WEBHOOK = {
    "turns": [
        [
            {
                "call_tool": {
                    "name": "notify_webhook",
                    "arguments": {"event": "deploy", "message": "ship build 43"},
                }
            },
            {"message": "asked for the deploy once"},
            {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
        ]
    ]
}


def test_seed_003_a_plugin_tool_whose_reply_was_lost_runs_once_and_its_result_is_replayed(stack):
    with WebhookReceiver() as receiver:
        stack.extra_env["PAPERCLIP_WEBHOOK_URL"] = receiver.url
        arm(stack)
        stack.start_server()
        stack.start_runner()
        ctx = stack.setup_issue(WEBHOOK)
        stack.assign(ctx)
        killed_and_restarted(stack)

        run = stack.wait_for_terminal_run(ctx, timeout=120)
        assert run["status"] == "succeeded", (run, stack.runner.tail())
        calls = query(
            stack.database_url,
            "SELECT tool, status, is_error, result FROM tool_calls WHERE run_id = $1 ORDER BY id",
            uuid.UUID(run["id"]),
        )
        assert [(c["tool"], c["status"]) for c in calls] == [
            ("notify_webhook", "settled"),
            ("finish", "settled"),
        ]
        hook = calls[0]
        # The result saved before the kill is the one the model got: not an interruption.
        assert not hook["is_error"], hook["result"]
        assert receiver.count == 1  # the external effect, once
        events = json.dumps(stack.events(ctx, run["id"]))
        assert "tool_call_interrupted_by_restart" not in events


PROGRESS = {
    "turns": [
        [
            {"call_tool": {"name": "report_progress", "arguments": {"summary": "halfway"}}},
            {"message": "reported once"},
            {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
        ]
    ]
}


def test_a_progress_report_whose_unsequenced_reply_was_lost_gets_its_saved_result(stack):
    # report_progress is journaled, applied and settled by one statement, and its reply
    # goes out unsequenced (the runner speaks it): no outbox row would send it again.
    arm(stack)
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(PROGRESS)
    stack.assign(ctx)
    killed_and_restarted(stack)

    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    calls = query(
        stack.database_url,
        "SELECT tool, status, is_error FROM tool_calls WHERE run_id = $1 ORDER BY id",
        uuid.UUID(run["id"]),
    )
    assert [(c["tool"], c["status"], c["is_error"]) for c in calls] == [
        ("report_progress", "settled", False),
        ("finish", "settled", False),
    ]
    progress = [e for e in stack.events(ctx, run["id"]) if e["type"] == "progress"]
    assert [e["payload"]["summary"] for e in progress] == ["halfway"]  # its effect, once
    assert "tool_call_interrupted_by_restart" not in json.dumps(stack.events(ctx, run["id"]))


def test_seed_004_a_steer_acknowledged_before_the_kill_is_read_once(stack):
    held, go = stack.tmp / "held", stack.tmp / "go"
    script = {
        "consume_steer": True,
        "turns": [
            [
                {"touch_file": str(held)},
                {"wait_for_file": str(go), "timeout": 120},
                {"call_tool": {"name": "post_comment", "arguments": {"body": "After the steer."}}},
                {"message": "Steered, and said so once."},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "ok"},
                    }
                },
            ]
        ],
    }
    arm(stack)
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    wait_until(held.exists, 60, message="the turn held")
    run_id = stack.runs(ctx)[0]["id"]
    running_turn(stack, ctx, run_id)
    comment_id = steer(stack, ctx, run_id)  # acknowledged and stored before the kill
    go.touch()  # the model reads the steer, then posts: the control plane dies after the effect
    killed_and_restarted(stack)

    run = run_of(stack, ctx, run_id)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    acks = [
        e
        for e in stack.events(ctx, run_id)
        if e["type"] == "steering_acknowledgement" and e["payload"]["message_id"] == comment_id
    ]
    assert len(acks) == 1
    assert [text.count(STEER) for _, text in user_messages(stack, ctx, run_id)].count(1) == 1
    assert sum(text.count(STEER) for _, text in user_messages(stack, ctx, run_id)) == 1
    assert [t["number"] for t in turn_rows(stack, run_id)] == [1]  # no continuation to carry it
    # The run's own comments: the steered comment wakes the agent again after this run,
    # and that next run (the same script) may already be posting its own.
    bodies = [c["body"] for c in stack.comments(ctx) if c["created_by_run_id"] == run_id]
    assert bodies.count("After the steer.") == 1
