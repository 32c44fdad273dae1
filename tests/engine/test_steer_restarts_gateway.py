"""Seed 004 with the gateway: a follow-up acknowledged but unread, then two restarts: read once.

Real processes: the control plane, the runner and the fake gateway (OpenClaw
2026.9's protocol). A steer to a gateway is a follow-up: another ``agent``
request on the session, which the gateway runs after the current one; the
ledger reads it when that run starts (``agent.lifecycle`` of
``<run id>:follow-up:<message id>``). The first turn holds with the follow-up
queued; the runner and the gateway are SIGKILLed (the gateway's queue goes
with it); the next turn carries the steer; once its own gateway run started,
a second SIGKILL's next turn carries nothing.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from tests.engine.test_steer_restarts import STEER, running_turn, turn_rows
from tests.engine.test_steer_restarts_opencode import follow_up
from tests.providers.gateway.conftest import start_fake_gateway, start_stack
from tests.providers.scenarios import fake_agent
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


@pytest.fixture
def gateway_stack(stack):
    """The engine tests' stack; its gateway stopped at the end."""
    yield stack
    gateway = getattr(stack, "gateway", None)
    if gateway is not None:
        gateway.stop()


def gateway_runs_started(stack, ctx, run_id: str) -> list[tuple[int, str]]:
    """(turn, gateway run id) of every gateway run that started, in log order."""
    return [
        (e["turn"], e["payload"]["runId"])
        for e in stack.events(ctx, run_id)
        if e["type"] == "agent.lifecycle" and e["payload"].get("data", {}).get("phase") == "start"
    ]


def kill_runner_and_gateway(stack) -> None:
    """SIGKILL the runner and the gateway; start both again (the gateway on its port)."""
    gateway = stack.gateway
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    os.killpg(gateway.process.pid, signal.SIGKILL)
    gateway.process.wait(10)
    start_fake_gateway(stack.tmp, stack.script_dir, gateway)
    stack.start_runner(launch={"gateway": {"default": gateway.profile()}}, env=gateway.runner_env())


def agent_messages(stack, run_id: str) -> list[str]:
    """The message of every ``agent`` request of the run the gateway processes received, in
    order (the comment also wakes the agent again once the run is over: another run)."""
    lines = stack.gateway.log_path.read_text().splitlines()
    frames = [r["frame"] for r in map(json.loads, lines) if r["type"] == "received"]
    return [
        f["params"]["message"]
        for f in frames
        if f["method"] == "agent" and f["params"]["idempotencyKey"].startswith(run_id)
    ]


def test_an_unread_gateway_follow_up_is_delivered_once_across_two_restarts(gateway_stack):
    stack = gateway_stack
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    start_stack(stack, start_fake_gateway(stack.tmp, stack.script_dir))
    reached, go = stack.tmp / "reached", stack.tmp / "go"
    # A gateway's first run of the session (each restarted gateway counts anew): hold at the
    # gate, then finish. A second run of the session (the follow-up) never starts.
    held = [
        {"touch_file": str(reached)},
        {"wait_for_file": str(go), "timeout": 300},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
        {"message": "Done, changelog included."},
    ]
    model = "scripted-gateway-steer"
    ctx = fake_agent(
        stack, "gateway", {"turns": [held, [{"fail": "not run"}]]}, {"agent_id": model}, model
    )
    stack.assign(ctx)
    wait_until(reached.exists, 60, message="the first turn held")
    run_id = stack.runs(ctx)[0]["id"]
    running_turn(stack, ctx, run_id)
    message_id = follow_up(stack, ctx, run_id)  # queued behind the held gateway run: unread
    assert f"{run_id}:follow-up:{message_id}" not in {
        r for _, r in gateway_runs_started(stack, ctx, run_id)
    }

    reached.unlink()
    kill_runner_and_gateway(stack)
    wait_until(reached.exists, 90, message="the second turn held")
    wait_until(
        lambda: any(turn == 2 for turn, _ in gateway_runs_started(stack, ctx, run_id)),
        30,
        message="the second turn's gateway run started, in the log",
    )
    reached.unlink()
    kill_runner_and_gateway(stack)  # a later restart, after the second turn's run started
    wait_until(reached.exists, 90, message="the third turn held")
    go.write_text("")

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
    # What the gateways were asked to run: the follow-up once (lost with the first gateway,
    # never run), then the steer in the second turn's prompt only.
    messages = agent_messages(stack, run_id)
    assert [m.count(STEER) for m in messages] == [0, 1, 1, 0], messages
    started = [r for _, r in gateway_runs_started(stack, ctx, run_id)]
    assert not any(":follow-up:" in r for r in started), started
