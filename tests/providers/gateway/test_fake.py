"""The real-gateway scenarios against the fake gateway, reached by a real runner's profile."""

from __future__ import annotations

import json

import pytest

from tests.providers.fake_suite import FakeSuite
from tests.providers.gateway.conftest import ALREADY_GOING, restart_runner, runner_said
from tests.providers.gateway.provider import GATEWAY
from tests.providers.real_cli_loss import session_reported, turns
from tests.providers.scenarios import WAIT, assert_succeeded_once, fake_gate, wait_reached
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


class TestFake(FakeSuite):
    provider = GATEWAY


def fake_log(stack) -> list[dict]:
    return [json.loads(line) for line in stack.gateway.log_path.read_text().splitlines()]


def requests(stack) -> list[str]:
    """The methods the fake gateway was asked, in order."""
    return [r["frame"]["method"] for r in fake_log(stack) if r["type"] == "received"]


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
    ctx = GATEWAY.fake_agent(gateway_stack, {"turns": [lost, going_on]})
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
