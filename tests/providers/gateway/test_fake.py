"""The real-gateway scenarios against the fake gateway, reached by a real runner's profile."""

from __future__ import annotations

import uuid

import pytest

from tests.providers.gateway.conftest import start_fake_gateway, start_stack
from tests.providers.scenarios import (
    GUARD_FAKE_SCRIPT,
    TOOLS_THEN_FINISH,
    WAIT,
    assert_succeeded_once,
    fake_agent,
    fake_gate,
    restart_script,
    run_fake_restart,
    run_fake_scenarios_tools,
    run_guard_correction,
    steer_and_wait,
    wait_reached,
)

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def agent(stack, script) -> dict:
    if getattr(stack, "gateway", None) is None:
        stack.script_dir.mkdir(parents=True, exist_ok=True)
        start_stack(stack, start_fake_gateway(stack.tmp, stack.script_dir))
    name = f"scripted-{uuid.uuid4().hex[:8]}"
    return fake_agent(stack, "gateway", script, {"agent_id": name}, name)


def test_a_run_calls_our_tools_and_succeeds(gateway_stack):
    run = run_fake_scenarios_tools(gateway_stack, agent(gateway_stack, TOOLS_THEN_FINISH))
    events = gateway_stack.events({"company": {"id": run["company_id"]}}, run["id"])
    assert {e["payload"]["runId"] for e in events if e["type"].startswith("agent.")} == {run["id"]}


def test_a_follow_up_during_a_slow_step_is_answered_in_the_same_turn(gateway_stack):
    reached, go = fake_gate(gateway_stack)
    first = [
        {"call_tool": {"name": "get_task_context", "arguments": {}}},
        {"touch_file": str(reached)},
        {"wait_for_file": str(go), "timeout": 120},
        {"message": "Reading the task."},
    ]
    follow_up = [
        {"call_tool": {"name": "post_comment", "arguments": {"body": "Changelog mentioned."}}},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
        {"message": "Done."},
    ]
    ctx = agent(gateway_stack, {"turns": [first, follow_up]})
    gateway_stack.assign(ctx)
    wait_reached(reached)
    (run,) = gateway_stack.runs(ctx)
    answer = steer_and_wait(gateway_stack, ctx, run["id"], "steer-1", "Also the changelog.")
    assert answer == "steering_acknowledgement"
    go.write_text("")
    run = gateway_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(gateway_stack, ctx, run, "Changelog mentioned.")


def test_sigkill_of_the_control_plane_during_a_slow_step_has_no_duplicate_effect(gateway_stack):
    reached, go = fake_gate(gateway_stack)
    ctx = agent(gateway_stack, restart_script(reached, go))
    run_fake_restart(gateway_stack, ctx, reached, go)


def test_a_refused_finish_is_corrected_in_the_same_turn(gateway_stack):
    ctx = agent(gateway_stack, GUARD_FAKE_SCRIPT)
    run = run_guard_correction(gateway_stack, ctx)
    events = gateway_stack.events(ctx, run["id"])
    assert {e["payload"]["runId"] for e in events if e["type"].startswith("agent.")} == {run["id"]}
