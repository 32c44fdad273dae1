"""The real OpenCode CLI (pinned, from npm) driven by Paperclip, the model a scripted endpoint.

OpenCode names the run's MCP tools ``paperclip_<tool>``; a message sent during
a turn is a follow-up, queued after the running step and answered in the same
turn.
"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.engine.test_steer_restarts import STEER, turn_rows
from tests.engine.test_steer_restarts_opencode import follow_up, prompts_answered
from tests.providers.opencode.cli import OPENCODE
from tests.providers.opencode.conftest import MODEL_KEY_VARIABLE, real_config, start_real
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

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.opencode_cli]


def tool(name: str, arguments: dict | None = None) -> FunctionCall:
    return FunctionCall(f"paperclip_{name}", arguments or {})


def new_agent(stack, endpoint: ModelEndpoint, steps: list) -> dict:
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    endpoint.script(model, steps)
    ctx = stack.setup_issue({}, provider_config=real_config(endpoint, model), provider="opencode")
    ctx["model"] = model
    return ctx


def test_a_run_calls_our_tools_and_succeeds(opencode_stack, model_endpoint):
    start_real(opencode_stack)
    steps = [
        calls(tool("get_task_context")),
        calls(tool("post_comment", {"body": "Looking at it."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"})),
        say("Done."),
    ]
    ctx = new_agent(opencode_stack, model_endpoint, steps)
    opencode_stack.assign(ctx)
    run = opencode_stack.wait_for_terminal_run(ctx, timeout=WAIT)

    run = assert_succeeded_once(opencode_stack, ctx, run, "Looking at it.")
    assert run["answer"] == "Done."
    assert_each_tool_once(opencode_stack, run["id"])
    requests = model_endpoint.scripted(ctx["model"])
    assert len(requests) == 4 and model_endpoint.exhausted(ctx["model"]) == []
    assert "Fix the build" in json.dumps(requests[1].tool_outputs())
    offered = set(requests[0].tool_names())
    assert {"paperclip_get_task_context", "paperclip_finish", "paperclip_block"} <= offered
    # What a run does not offer the model: the web, sub-agents, questions nobody answers.
    assert not offered & {"webfetch", "websearch", "task", "question"}
    # The standing rules ride as OpenCode's system text, not in the user prompt.
    system = requests[0].body["messages"][0]
    assert system["role"] == "system" and "## Paperclip rules" in system["content"]
    assert not any("## Paperclip rules" in text for text in requests[0].user_texts())


def test_a_follow_up_during_a_slow_step_is_answered_in_the_same_turn(
    opencode_stack, model_endpoint
):
    start_real(opencode_stack)
    steps = [
        calls(tool("get_task_context")),
        say(
            "Reading the task.", hold="slow-step"
        ),  # ends the first prompt: the follow-up runs next
        calls(tool("post_comment", {"body": "Changelog mentioned."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"})),
        say("Done, with the changelog."),
    ]
    ctx = new_agent(opencode_stack, model_endpoint, steps)
    set_price(opencode_stack, ctx["model"])
    opencode_stack.assign(ctx)
    gate = model_endpoint.gate("slow-step")
    gate.wait_reached(WAIT)
    (run,) = opencode_stack.runs(ctx)

    answer = steer_and_wait(
        opencode_stack, ctx, run["id"], "steer-1", "Also mention the changelog."
    )
    assert answer == "steering_acknowledgement"
    gate.release()
    run = opencode_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(opencode_stack, ctx, run, "Changelog mentioned.")

    later = [r for r in model_endpoint.scripted(ctx["model"]) if r.step is not None and r.step >= 2]
    assert later and all("Also mention the changelog." in r.user_texts() for r in later)
    events = opencode_stack.events(ctx, run["id"])
    users = {
        e["payload"]["info"]["id"]
        for e in events
        if e["type"] == "message.updated" and e["payload"]["info"]["role"] == "user"
    }
    assert len(users) == 2  # the prompt and the follow-up, in one turn
    # The follow-up's answers are the turn's too: every response counted, once.
    assert_usage_recorded(opencode_stack, ctx, run["id"], model_endpoint.usage_sent(ctx["model"]))


def test_sigkill_of_the_control_plane_during_a_slow_step_has_no_duplicate_effect(
    opencode_stack, model_endpoint
):
    start_real(opencode_stack)
    steps = [
        calls(tool("get_task_context")),
        calls(tool("post_comment", {"body": "Before the restart."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"}), hold="slow-finish"),
        say("Done."),
    ]
    ctx = new_agent(opencode_stack, model_endpoint, steps)
    set_price(opencode_stack, ctx["model"])
    opencode_stack.assign(ctx)
    gate = model_endpoint.gate("slow-finish")
    gate.wait_reached(WAIT)

    restart_control_plane(opencode_stack)
    gate.release()  # the model answers while the restarted control plane adopts the run

    run = opencode_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(opencode_stack, ctx, run, "Before the restart.")
    assert run["controller_epoch"] >= 2
    assert_each_tool_once(opencode_stack, run["id"])
    assert_log_is_clean(opencode_stack, ctx, run)
    # Usage reported before the restart and replayed after it is counted once.
    assert_usage_recorded(opencode_stack, ctx, run["id"], model_endpoint.usage_sent(ctx["model"]))


def test_a_refused_finish_is_corrected_in_the_same_turn(opencode_stack, model_endpoint):
    start_real(opencode_stack)
    ctx = new_agent(opencode_stack, model_endpoint, guard_model_steps(tool))
    run = run_guard_correction(opencode_stack, ctx)
    assert_model_followed_the_correction(model_endpoint, ctx["model"])
    events = opencode_stack.events(ctx, run["id"])
    users = {
        e["payload"]["info"]["id"]
        for e in events
        if e["type"] == "message.updated" and e["payload"]["info"]["role"] == "user"
    }
    assert len(users) == 1  # one prompt: the correction came within its turn


def test_the_usage_the_control_plane_records_is_what_the_model_sent(opencode_stack, model_endpoint):
    """Each answer's tokens, from OpenCode's completed messages, recorded once and priced from
    the price table (OpenCode has no price for the scripted model: its cost is 0)."""
    start_real(opencode_stack)
    steps = [
        calls(tool("get_task_context"), usage=Usage(48_000, 310, 40_000, 120)),
        calls(tool("post_comment", {"body": "Looking at it."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"})),
        say("Done."),
    ]
    ctx = new_agent(opencode_stack, model_endpoint, steps)
    set_price(opencode_stack, ctx["model"])
    opencode_stack.assign(ctx)
    run = opencode_stack.wait_for_terminal_run(ctx, timeout=WAIT)

    assert_succeeded_once(opencode_stack, ctx, run, "Looking at it.")
    sent = model_endpoint.usage_sent(ctx["model"])
    assert len(sent) == len(steps) and sent[0] == Usage(48_000, 310, 40_000, 120)
    assert_usage_recorded(opencode_stack, ctx, run["id"], sent)


def start_runner_again(stack) -> None:
    """The runner's next process, with the same home (and so OpenCode's stored sessions)."""
    stack.start_runner(
        launch={"opencode": {"default": [str(OPENCODE.require()), "serve"]}},
        env={
            MODEL_KEY_VARIABLE: "scripted-dummy-key",
            "HOME": str(stack.tmp / "home"),
            **OPENCODE.env(),
        },
    )


def test_everything_sigkilled_mid_turn_resumes_the_opencode_session(opencode_stack, model_endpoint):
    """Issue 37, acceptance 1: the model does not look at the task again; only the resumed
    session (which holds its comment) keeps the comment to one."""
    start_real(opencode_stack)
    ctx = new_agent(opencode_stack, model_endpoint, lost_turn_steps(tool))
    opencode_stack.assign(ctx)
    gate = model_endpoint.gate(HOLD)
    gate.wait_reached(WAIT)
    run_id = opencode_stack.runs(ctx)[0]["id"]
    session = session_reported(opencode_stack, run_id)

    kill_everything(opencode_stack, lambda: start_runner_again(opencode_stack))
    gate.release()  # the held answer goes to a server that is gone

    run = assert_resumed_once(opencode_stack, ctx, run_id)
    assert turns(opencode_stack, run_id)[1]["session_ref"] == session
    assert_each_tool_once(opencode_stack, run["id"])
    assert_no_second_look(model_endpoint, ctx["model"])
    # Resumed: the continuation's request holds the first turn's comment call.
    after = model_endpoint.scripted(ctx["model"])[3]
    assert BEFORE in json.dumps(after.body["messages"])


def test_an_unread_follow_up_is_read_once_across_two_restarts(opencode_stack, model_endpoint):
    """Issue 37, acceptance 2: a follow-up queued behind the running step, unread, then
    everything SIGKILLed twice: the model is given it exactly once."""
    start_real(opencode_stack)
    steps = [
        calls(tool("get_task_context")),
        say("Reading the task.", hold="first"),  # the follow-up waits in OpenCode's queue
        say("Thinking about the changelog.", hold="second"),  # the next prompt is answered
        calls(tool("post_comment", {"body": BEFORE})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed, changelog included"})),
        say("Done, changelog included."),
    ]
    ctx = new_agent(opencode_stack, model_endpoint, steps)
    opencode_stack.assign(ctx)
    first = model_endpoint.gate("first")
    first.wait_reached(WAIT)
    run_id = opencode_stack.runs(ctx)[0]["id"]
    session_reported(opencode_stack, run_id)
    follow_up(opencode_stack, ctx, run_id)

    kill_everything(opencode_stack, lambda: start_runner_again(opencode_stack))
    first.release()
    second = model_endpoint.gate("second")
    second.wait_reached(WAIT)
    wait_until(
        lambda: 2 in prompts_answered(opencode_stack, ctx, run_id),
        WAIT,
        message="the second turn's prompt being answered, in the log",
    )
    kill_everything(opencode_stack, lambda: start_runner_again(opencode_stack))
    second.release()

    run = opencode_stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), (run, opencode_stack.runner.tail())
    rows = turn_rows(opencode_stack, run_id)
    assert [(r["number"], r["kind"]) for r in rows] == [
        (1, "initial"),
        (2, "continuation"),
        (3, "continuation"),
    ], rows
    assert rows[1]["input"]["prompt"].count(STEER) == 1
    assert rows[2]["input"]["steeredMessages"] == []
    assert STEER not in rows[2]["input"]["prompt"]
    # What the model saw once the steer was read: the steer once, in every later request.
    seen = {
        r.step: json.dumps(r.body["messages"]).count(STEER)
        for r in model_endpoint.scripted(ctx["model"])
    }
    assert {step: seen[step] for step in range(2, 6)} == dict.fromkeys(range(2, 6), 1), seen
    assert_succeeded_once(opencode_stack, ctx, run, BEFORE)


def test_a_turn_ended_in_prose_is_nudged_in_its_session_and_reports(opencode_stack, model_endpoint):
    """Issue 53: the model ends its first turn without finish; the same OpenCode session gets
    the report nudge, the model reports, and the run succeeds with its one comment."""
    start_real(opencode_stack)
    ctx = new_agent(opencode_stack, model_endpoint, unreported_steps(tool))
    opencode_stack.assign(ctx)
    assert_nudged_once(opencode_stack, ctx, model_endpoint)


def test_with_the_nudges_at_0_a_turn_ended_in_prose_fails_the_run(opencode_stack, model_endpoint):
    opencode_stack.extra_env.update(NO_NUDGES)
    start_real(opencode_stack)
    ctx = new_agent(opencode_stack, model_endpoint, unreported_steps(tool))
    opencode_stack.assign(ctx)
    assert_failed_unnudged(opencode_stack, ctx, model_endpoint)
