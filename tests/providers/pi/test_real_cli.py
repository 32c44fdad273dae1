"""The real Pi CLI (pinned, from npm) driven by Paperclip, the model a scripted endpoint.

Pi has no MCP client: the run's tools reach the model through paperclip-pi's
extension, as ``paperclip_<tool>``. Pi's ``steer`` enters the running turn
before the model's next call.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.engine.test_steer_restarts import STEER, steer, turn_rows
from tests.engine.test_steer_restarts_pi import user_inputs
from tests.providers.pi.cli import PI
from tests.providers.pi.conftest import MODEL_KEY_VARIABLE, real_config, start_real
from tests.providers.real_cli_loss import (
    BEFORE,
    HOLD,
    assert_no_second_look,
    assert_resumed_once,
    kill_everything,
    lost_turn_steps,
    session_reported,
    turns,
)
from tests.providers.report_nudge import (
    NO_NUDGES,
    assert_failed_unnudged,
    assert_nudged_once,
    unreported_steps,
)
from tests.providers.scenarios import (
    WAIT,
    assert_each_tool_once,
    assert_log_is_clean,
    assert_model_followed_the_correction,
    assert_succeeded_once,
    assert_usage_recorded,
    guard_model_steps,
    restart_control_plane,
    run_guard_correction,
    set_price,
    steer_and_wait,
)
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import FunctionCall, Usage, calls, say
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.pi_cli]


def tool(name: str, arguments: dict | None = None) -> FunctionCall:
    return FunctionCall(f"paperclip_{name}", arguments or {})


def new_agent(stack, endpoint: ModelEndpoint, steps: list) -> dict:
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    endpoint.script(model, steps)
    ctx = stack.setup_issue({}, provider_config=real_config(endpoint, model), provider="pi")
    ctx["model"] = model
    return ctx


def test_a_run_calls_our_tools_through_the_extension_and_succeeds(pi_stack, model_endpoint):
    start_real(pi_stack)
    steps = [
        calls(tool("get_task_context")),
        calls(tool("post_comment", {"body": "Looking at it."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"})),
        say("Done."),
    ]
    ctx = new_agent(pi_stack, model_endpoint, steps)
    pi_stack.assign(ctx)
    run = pi_stack.wait_for_terminal_run(ctx, timeout=WAIT)

    run = assert_succeeded_once(pi_stack, ctx, run, "Looking at it.")
    assert run["answer"] == "Done."
    assert_each_tool_once(pi_stack, run["id"])
    requests = model_endpoint.scripted(ctx["model"])
    assert len(requests) == 4 and model_endpoint.exhausted(ctx["model"]) == []
    assert "Fix the build" in json.dumps(requests[1].tool_outputs())
    offered = set(requests[0].tool_names())
    assert {"paperclip_get_task_context", "paperclip_finish", "paperclip_block"} <= offered
    # The standing rules ride in Pi's system prompt, after Pi's own; not in the user prompt.
    system = requests[0].body["messages"][0]
    assert system["role"] in ("system", "developer") and "## Paperclip rules" in str(
        system["content"]
    )
    assert not any("## Paperclip rules" in text for text in requests[0].user_texts())


def test_a_steer_during_a_slow_step_enters_the_same_turn(pi_stack, model_endpoint):
    start_real(pi_stack)
    steps = [
        calls(tool("get_task_context")),
        calls(tool("post_comment", {"body": "Changelog mentioned."}), hold="slow-step"),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"})),
        say("Done, with the changelog."),
    ]
    ctx = new_agent(pi_stack, model_endpoint, steps)
    pi_stack.assign(ctx)
    gate = model_endpoint.gate("slow-step")
    gate.wait_reached(WAIT)
    (run,) = pi_stack.runs(ctx)

    answer = steer_and_wait(pi_stack, ctx, run["id"], "steer-1", "Also mention the changelog.")
    assert answer == "steering_acknowledgement"
    gate.release()
    run = pi_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(pi_stack, ctx, run, "Changelog mentioned.")

    # Read before the model's next call: every later request carries it, the earlier ones not.
    requests = model_endpoint.scripted(ctx["model"])
    assert all("Also mention the changelog." not in r.user_texts() for r in requests[:2])
    assert all("Also mention the changelog." in r.user_texts() for r in requests[2:])
    events = pi_stack.events(ctx, run["id"])
    assert [e["type"] for e in events].count("agent_end") == 1  # one turn


def test_sigkill_of_the_control_plane_during_a_slow_step_has_no_duplicate_effect(
    pi_stack, model_endpoint
):
    start_real(pi_stack)
    steps = [
        calls(tool("get_task_context")),
        calls(tool("post_comment", {"body": "Before the restart."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"}), hold="slow-finish"),
        say("Done."),
    ]
    ctx = new_agent(pi_stack, model_endpoint, steps)
    set_price(pi_stack, ctx["model"])
    pi_stack.assign(ctx)
    gate = model_endpoint.gate("slow-finish")
    gate.wait_reached(WAIT)

    restart_control_plane(pi_stack)
    gate.release()

    run = pi_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(pi_stack, ctx, run, "Before the restart.")
    assert run["controller_epoch"] >= 2
    assert_each_tool_once(pi_stack, run["id"])
    assert_log_is_clean(pi_stack, ctx, run)
    # Usage reported before the restart and replayed after it is counted once.
    sent = model_endpoint.usage_sent(ctx["model"])
    assert_usage_recorded(pi_stack, ctx, run["id"], sent, reasoning=False)


def test_a_refused_finish_is_corrected_in_the_same_turn(pi_stack, model_endpoint):
    start_real(pi_stack)
    ctx = new_agent(pi_stack, model_endpoint, guard_model_steps(tool))
    run = run_guard_correction(pi_stack, ctx)
    assert_model_followed_the_correction(model_endpoint, ctx["model"])
    types = [e["type"] for e in pi_stack.events(ctx, run["id"])]
    assert types.count("agent_end") == 1  # one turn


def test_the_usage_the_control_plane_records_is_what_the_model_sent(pi_stack, model_endpoint):
    """Each response's tokens, from Pi's message_end, recorded once and priced from the price
    table (Pi has no price for the scripted model: its cost is 0). Pi counts reasoning tokens
    within the output and does not report them apart."""
    start_real(pi_stack)
    steps = [
        calls(tool("get_task_context"), usage=Usage(48_000, 310, 40_000, 120)),
        calls(tool("post_comment", {"body": "Looking at it."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"})),
        say("Done."),
    ]
    ctx = new_agent(pi_stack, model_endpoint, steps)
    set_price(pi_stack, ctx["model"])
    pi_stack.assign(ctx)
    run = pi_stack.wait_for_terminal_run(ctx, timeout=WAIT)

    assert_succeeded_once(pi_stack, ctx, run, "Looking at it.")
    sent = model_endpoint.usage_sent(ctx["model"])
    assert len(sent) == len(steps) and sent[0] == Usage(48_000, 310, 40_000, 120)
    assert_usage_recorded(pi_stack, ctx, run["id"], sent, reasoning=False)


def start_runner_again(stack) -> None:
    """The runner's next process, on the same folder (and so the same Pi session files)."""
    stack.start_runner(
        launch={"pi": {"default": [str(PI.require())]}},
        env={MODEL_KEY_VARIABLE: "scripted-dummy-key", "HOME": str(stack.tmp / "home"), **PI.env()},
    )


def test_everything_sigkilled_mid_turn_resumes_the_pi_session_file(pi_stack, model_endpoint):
    """Issue 37, acceptance 1: the model does not look at the task again; only the resumed
    session (which holds its comment) keeps the comment to one."""
    start_real(pi_stack)
    ctx = new_agent(pi_stack, model_endpoint, lost_turn_steps(tool))
    pi_stack.assign(ctx)
    gate = model_endpoint.gate(HOLD)
    gate.wait_reached(WAIT)
    run_id = pi_stack.runs(ctx)[0]["id"]
    session = session_reported(pi_stack, run_id)

    kill_everything(pi_stack, lambda: start_runner_again(pi_stack))
    gate.release()  # the held answer goes to a Pi that is gone

    run = assert_resumed_once(pi_stack, ctx, run_id)
    assert turns(pi_stack, run_id)[1]["session_ref"] == session
    assert_each_tool_once(pi_stack, run["id"])
    assert_no_second_look(model_endpoint, ctx["model"])
    # Resumed: the continuation's request holds the first turn's comment call.
    after = model_endpoint.scripted(ctx["model"])[3]
    assert BEFORE in json.dumps(after.body["messages"])


def test_an_unread_steer_is_read_once_across_two_restarts(pi_stack, model_endpoint):
    """Issue 37, acceptance 2: acknowledged in Pi's queue, unread, then everything SIGKILLed
    twice: the steer enters the conversation exactly once."""
    start_real(pi_stack)
    steps = [
        calls(tool("get_task_context")),
        say("Reading the task.", hold="first"),  # the steer waits in Pi's queue
        say("Thinking about the changelog.", hold="second"),  # the steer was read
        calls(tool("post_comment", {"body": BEFORE})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed, changelog included"})),
        say("Done, changelog included."),
    ]
    ctx = new_agent(pi_stack, model_endpoint, steps)
    pi_stack.assign(ctx)
    first = model_endpoint.gate("first")
    first.wait_reached(WAIT)
    run_id = pi_stack.runs(ctx)[0]["id"]
    session_reported(pi_stack, run_id)
    steer(pi_stack, ctx, run_id)  # a person's comment, acknowledged by the runner
    wait_until(
        lambda: any(e["type"] == "steering_acknowledgement" for e in pi_stack.events(ctx, run_id)),
        WAIT,
        message="the steer acknowledged",
    )

    kill_everything(pi_stack, lambda: start_runner_again(pi_stack))
    first.release()
    second = model_endpoint.gate("second")
    second.wait_reached(WAIT)
    wait_until(
        lambda: any(t == 2 and STEER in text for t, text in user_inputs(pi_stack, ctx, run_id)),
        WAIT,
        message="the second turn's input, with the steer, in the conversation",
    )
    kill_everything(pi_stack, lambda: start_runner_again(pi_stack))
    second.release()

    run = pi_stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), (run, pi_stack.runner.tail())
    rows = turn_rows(pi_stack, run_id)
    assert [(r["number"], r["kind"]) for r in rows] == [
        (1, "initial"),
        (2, "continuation"),
        (3, "continuation"),
    ], rows
    assert rows[1]["input"]["prompt"].count(STEER) == 1
    assert STEER not in rows[2]["input"]["prompt"]
    delivered = [text for t, text in user_inputs(pi_stack, ctx, run_id) if t > 1]
    assert sum(text.count(STEER) for text in delivered) == 1, delivered
    # What the third turn's model saw first: the resumed session holds the steer once.
    [third] = [r for r in model_endpoint.scripted(ctx["model"]) if r.step == 3]
    assert json.dumps(third.body["messages"]).count(STEER) == 1
    assert_succeeded_once(pi_stack, ctx, run, BEFORE)


def test_a_turn_ended_in_prose_is_nudged_in_its_session_and_reports(pi_stack, model_endpoint):
    """Issue 53: the model ends its first turn without finish; the same Pi session gets the
    report nudge, the model reports, and the run succeeds with its one comment."""
    start_real(pi_stack)
    ctx = new_agent(pi_stack, model_endpoint, unreported_steps(tool))
    pi_stack.assign(ctx)
    assert_nudged_once(pi_stack, ctx, model_endpoint)


def test_with_the_nudges_at_0_a_turn_ended_in_prose_fails_the_run(pi_stack, model_endpoint):
    pi_stack.extra_env.update(NO_NUDGES)
    start_real(pi_stack)
    ctx = new_agent(pi_stack, model_endpoint, unreported_steps(tool))
    pi_stack.assign(ctx)
    assert_failed_unnudged(pi_stack, ctx, model_endpoint)
