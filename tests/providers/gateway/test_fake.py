"""The real-gateway scenarios against the fake gateway, reached by a real runner's profile."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.providers.gateway.conftest import (
    ALREADY_GOING,
    restart_runner,
    runner_said,
    start_fake_gateway,
    start_stack,
)
from tests.providers.real_cli_loss import session_reported, turns
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
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def agent(stack, script) -> dict:
    if getattr(stack, "gateway", None) is None:
        stack.script_dir.mkdir(parents=True, exist_ok=True)
        start_stack(stack, start_fake_gateway(stack.tmp, stack.script_dir))
    name = f"scripted-{uuid.uuid4().hex[:8]}"
    return fake_agent(stack, "gateway", script, {"agent_id": name}, name)


def fake_log(stack) -> list[dict]:
    return [json.loads(line) for line in stack.gateway.log_path.read_text().splitlines()]


def requests(stack) -> list[str]:
    """The methods the fake gateway was asked, in order."""
    return [r["frame"]["method"] for r in fake_log(stack) if r["type"] == "received"]


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


def test_a_runner_lost_twice_learns_the_end_of_the_gateway_run_it_left(gateway_stack):
    """The gateway outlives two runners. The second continuation asks again for the first
    one's gateway run (the same prompt, the same key): the gateway answers ``in_flight``
    once and never its end, so the driver asks ``agent.wait``. One comment, one run."""
    (reached1, go1), (reached2, go2) = fake_gate(gateway_stack), fake_gate(gateway_stack)
    lost = [
        {"call_tool": {"name": "get_task_context", "arguments": {}}},
        {"call_tool": {"name": "post_comment", "arguments": {"body": "Before the loss."}}},
        {"touch_file": str(reached1)},
        {"wait_for_file": str(go1), "timeout": 120},
        {"message": "Thinking about the fix."},
    ]
    going_on = [
        {"touch_file": str(reached2)},
        {"wait_for_file": str(go2), "timeout": 120},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
        {"message": "Done after the loss."},
    ]
    ctx = agent(gateway_stack, {"turns": [lost, going_on]})
    gateway_stack.assign(ctx)
    wait_reached(reached1)
    run_id = gateway_stack.runs(ctx)[0]["id"]
    session_reported(gateway_stack, run_id)

    restart_runner(gateway_stack)
    wait_until(lambda: len(turns(gateway_stack, run_id)) == 2, WAIT, message="a continuation")
    go1.write_text("")  # the lost turn's gateway run ends; the continuation's starts
    wait_reached(reached2)
    restart_runner(gateway_stack)
    wait_until(
        lambda: "agent.wait" in requests(gateway_stack),
        WAIT,
        message="the third turn asking for the end of the gateway run it was answered with",
    )
    assert runner_said(gateway_stack, ALREADY_GOING)
    go2.write_text("")

    run = gateway_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), gateway_stack.runner.tail()
    assert_succeeded_once(gateway_stack, ctx, run, "Before the loss.")
    assert [(t["number"], t["status"]) for t in turns(gateway_stack, run_id)] == [
        (1, "lost"),
        (2, "lost"),
        (3, "completed"),
    ]
    received = fake_log(gateway_stack)
    keys = [r["runId"] for r in received if r["type"] == "run"]
    assert len(keys) == 2 and keys[0] == run_id  # the third turn's key is the second's
    assert requests(gateway_stack).count("agent") == 3
    waited = [
        r["frame"]["params"]["runId"]
        for r in received
        if r["type"] == "received" and r["frame"]["method"] == "agent.wait"
    ]
    assert set(waited) == {keys[1]}
