"""Seed 003 on real processes: a plugin tool call a control-plane SIGKILL interrupted.

The ``notify_webhook`` call reaches the receiver (its effect happens), the
control plane is killed while the call waits for the receiver's answer (its
journal row admitted, unsettled), the next one adopts the runner; the
orphaned-callback policy settles the call as ``tool_call_interrupted_by_restart``
(the receiver has no receipt of it), the runner hands the late result to the
model, the turn completes and the run closes with every input settled. The
receiver counts one delivery: the tool never ran twice.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support.db import query
from tests.support.processes import wait_until
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

SCRIPT = {
    "turns": [
        [
            {
                "call_tool": {
                    "name": "notify_webhook",
                    "arguments": {"event": "deploy", "message": "ship build 42"},
                }
            },
            {"message": "asked for the deploy"},
            {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
        ]
    ]
}


def journal(stack, run_id):
    return query(
        stack.database_url,
        "SELECT tool, status, admitted_epoch, settled_epoch, is_error, result FROM tool_calls "
        "WHERE run_id = $1 ORDER BY id",
        uuid.UUID(run_id),
    )


def pending_calls(stack, ctx) -> list[dict]:
    return query(
        stack.database_url,
        "SELECT c.tool FROM tool_calls c JOIN runs r ON r.id = c.run_id "
        "WHERE r.issue_id = $1 AND c.status = 'pending'",
        uuid.UUID(ctx["issue"]["id"]),
    )


def test_a_plugin_tool_call_interrupted_by_a_restart_settles_once(stack):
    with WebhookReceiver(hold=True) as receiver:
        stack.extra_env = {"PAPERCLIP_WEBHOOK_URL": receiver.url}
        stack.start_server()
        stack.start_runner()
        ctx = stack.setup_issue(SCRIPT)
        stack.assign(ctx)
        wait_until(lambda: receiver.count == 1, 60, message="the webhook call started")
        wait_until(lambda: pending_calls(stack, ctx), 30, message="the call admitted, unsettled")
        stack.servers[0].kill()
        stack.start_server()

        run = stack.wait_for_terminal_run(ctx, timeout=50)
        assert run["status"] == "succeeded", (run, stack.runner.tail())
        assert run["controller_epoch"] >= 2  # adopted by the restarted control plane
        calls = journal(stack, run["id"])
        assert [c["tool"] for c in calls] == ["notify_webhook", "finish"]
        assert all(c["status"] == "settled" for c in calls)  # every input settled
        hook = calls[0]
        result = json.loads(hook["result"]) if isinstance(hook["result"], str) else hook["result"]
        assert hook["is_error"] and result["error"]["code"] == "tool_call_interrupted_by_restart"
        assert result["error"]["outcome"] == "unknown" and result["error"]["retryable"] is False
        assert hook["admitted_epoch"] < hook["settled_epoch"]
        # The runner accepted the late result and the model read it.
        events = json.dumps(stack.events(ctx, run["id"]))
        assert "tool_call_interrupted_by_restart" in events
        # The receipt was asked for, and the tool never ran again.
        assert receiver.lookups and receiver.count == 1
        # Close drained: no settlement report, no hold on the task.
        assert "native_session_settlement_incomplete" not in events
        holds = query(
            stack.database_url,
            "SELECT kind FROM task_holds WHERE issue_id = $1",
            uuid.UUID(ctx["issue"]["id"]),
        )
        assert holds == []
