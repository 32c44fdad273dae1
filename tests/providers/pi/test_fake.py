"""The real-CLI scenarios against the fake Pi, as a launch profile of a real runner."""

from __future__ import annotations

import uuid

import pytest

from tests.providers.pi.conftest import start_fake
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
    return fake_agent(stack, "pi", script, config, model)


def test_a_run_calls_our_tools_and_succeeds(pi_stack):
    start_fake(pi_stack)
    run_fake_scenarios_tools(pi_stack, agent(pi_stack, TOOLS_THEN_FINISH))


def test_a_steer_during_a_slow_step_enters_the_same_turn(pi_stack):
    start_fake(pi_stack)
    reached, go = fake_gate(pi_stack)
    # Read before the next model call: the steer enters this agent run, no new one.
    steps = [
        {"call_tool": {"name": "get_task_context", "arguments": {}}},
        {"touch_file": str(reached)},
        {"wait_for_file": str(go), "timeout": 120},
        {"call_tool": {"name": "post_comment", "arguments": {"body": "Changelog mentioned."}}},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
        {"message": "Done."},
    ]
    ctx = agent(pi_stack, steps)
    pi_stack.assign(ctx)
    wait_reached(reached)
    (run,) = pi_stack.runs(ctx)
    answer = steer_and_wait(pi_stack, ctx, run["id"], "steer-1", "Also the changelog.")
    assert answer == "steering_acknowledgement"
    go.write_text("")
    run = pi_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(pi_stack, ctx, run, "Changelog mentioned.")
    events = pi_stack.events(ctx, run["id"])
    users = [
        e["payload"]["message"]["content"][0]["text"]
        for e in events
        if e["type"] == "message_end" and e["payload"]["message"]["role"] == "user"
    ]
    assert users[1:] == ["Also the changelog."]
    assert [e["type"] for e in events].count("agent_end") == 1


def test_sigkill_of_the_control_plane_during_a_slow_step_has_no_duplicate_effect(pi_stack):
    start_fake(pi_stack)
    reached, go = fake_gate(pi_stack)
    run_fake_restart(pi_stack, agent(pi_stack, restart_script(reached, go)), reached, go)


def test_a_refused_finish_is_corrected_in_the_same_turn(pi_stack):
    start_fake(pi_stack)
    ctx = agent(pi_stack, GUARD_FAKE_SCRIPT)
    run = run_guard_correction(pi_stack, ctx)
    types = [e["type"] for e in pi_stack.events(ctx, run["id"])]
    assert types.count("agent_end") == 1  # one turn
