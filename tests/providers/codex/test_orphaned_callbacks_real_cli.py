"""Seed 003 with the real Codex CLI: a plugin tool call a control-plane SIGKILL interrupted.

The same scenario as ``tests/engine/test_orphaned_callbacks.py``, the model
a scripted endpoint and the provider the pinned ``codex app-server``: the
webhook delivery starts, the control plane is killed while it waits (the call admitted), the next
one adopts the runner and settles the call as
``tool_call_interrupted_by_restart``; Codex hands the late result to the
model, the turn completes, close drains, and the receiver counts one delivery.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.engine.test_orphaned_callbacks import pending_calls
from tests.providers.codex.conftest import start_real
from tests.providers.codex.test_real_cli import WAIT, new_agent, tool_items
from tests.support.db import query
from tests.support.model_endpoint_script import calls, mcp_tool, say
from tests.support.processes import wait_until
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [
    pytest.mark.process,
    pytest.mark.installed_plugins,
    pytest.mark.codex_cli,
    pytest.mark.long_run,
]


def test_a_webhook_call_interrupted_by_a_restart_settles_once_with_the_real_cli(
    real_stack, model_endpoint
):
    with WebhookReceiver(hold=True) as receiver:
        real_stack.extra_env = {"PAPERCLIP_WEBHOOK_URL": receiver.url}
        start_real(real_stack)
        ctx = new_agent(
            real_stack,
            model_endpoint,
            [
                calls(mcp_tool("notify_webhook", {"event": "deploy", "message": "ship 42"})),
                calls(mcp_tool("finish", {"outcome": "done", "summary": "Asked for the deploy"})),
                say("Asked for the deploy; its outcome is unknown."),
            ],
            mcp_tool_timeout_seconds=300,
        )
        real_stack.assign(ctx)
        wait_until(lambda: receiver.count == 1, WAIT, message="the webhook call started")
        wait_until(lambda: pending_calls(real_stack, ctx), 30, message="the call admitted")
        real_stack.servers[0].kill()
        real_stack.start_server()

        run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT)
        assert run["status"] == "succeeded", (run, real_stack.runner.tail())
        rows = query(
            real_stack.database_url,
            "SELECT tool, status, is_error, result FROM tool_calls WHERE run_id = $1 ORDER BY id",
            uuid.UUID(run["id"]),
        )
        assert [r["tool"] for r in rows] == ["notify_webhook", "finish"]
        assert all(r["status"] == "settled" for r in rows)
        result = rows[0]["result"]
        result = json.loads(result) if isinstance(result, str) else result
        assert result["error"]["code"] == "tool_call_interrupted_by_restart"
        # Codex accepted the late result and gave it to the model.
        [hook] = [i for i in tool_items(real_stack, ctx, run) if i.get("tool") == "notify_webhook"]
        assert "tool_call_interrupted_by_restart" in json.dumps(hook)
        assert receiver.count == 1  # never run twice
        events = json.dumps(real_stack.events(ctx, run["id"]))
        assert "native_session_settlement_incomplete" not in events
