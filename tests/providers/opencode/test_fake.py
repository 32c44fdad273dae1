"""The real-CLI scenarios against the fake server, as a launch profile of a real runner."""

from __future__ import annotations

import uuid

import pytest

from tests.providers.opencode.conftest import start_fake
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
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    config = {
        "launch": "fake",
        "base_url": "http://127.0.0.1:9/v1",
        "model": model,
        "env_key": "SCRIPTED_MODEL_API_KEY",
    }
    return fake_agent(stack, "opencode", script, config, model)


def test_a_run_calls_our_tools_and_succeeds(opencode_stack):
    start_fake(opencode_stack)
    run_fake_scenarios_tools(opencode_stack, agent(opencode_stack, TOOLS_THEN_FINISH))


def test_a_follow_up_during_a_slow_step_is_answered_in_the_same_turn(opencode_stack):
    start_fake(opencode_stack)
    reached, go = fake_gate(opencode_stack)
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
    ctx = agent(opencode_stack, {"turns": [first, follow_up]})
    opencode_stack.assign(ctx)
    wait_reached(reached)
    (run,) = opencode_stack.runs(ctx)
    answer = steer_and_wait(opencode_stack, ctx, run["id"], "steer-1", "Also the changelog.")
    assert answer == "steering_acknowledgement"
    go.write_text("")
    run = opencode_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(opencode_stack, ctx, run, "Changelog mentioned.")


def test_sigkill_of_the_control_plane_during_a_slow_step_has_no_duplicate_effect(opencode_stack):
    start_fake(opencode_stack)
    reached, go = fake_gate(opencode_stack)
    run_fake_restart(
        opencode_stack, agent(opencode_stack, restart_script(reached, go)), reached, go
    )


def test_a_refused_finish_is_corrected_in_the_same_turn(opencode_stack):
    start_fake(opencode_stack)
    ctx = agent(opencode_stack, GUARD_FAKE_SCRIPT)
    run = run_guard_correction(opencode_stack, ctx)
    events = opencode_stack.events(ctx, run["id"])
    users = {
        e["payload"]["info"]["id"]
        for e in events
        if e["type"] == "message.updated" and e["payload"]["info"]["role"] == "user"
    }
    assert len(users) == 1  # one prompt: the correction came within its turn
