"""A real OpenClaw gateway (pinned, from npm, on Node 24) driven by Paperclip, the model scripted.

No local process is adopted: the run id is the ``agent`` request's
idempotency key. The run's tools reach the remote agent through the runner's
relay, which the gateway's ``mcp.servers.paperclip`` points at; OpenClaw names
them ``paperclip__<tool>``. A gateway takes ~10 s to start, so each scenario
starts one and there are five.
"""

from __future__ import annotations

import json
import os
import signal
import uuid

import pytest

from tests.engine.test_steer_restarts import STEER, turn_rows
from tests.engine.test_steer_restarts_opencode import follow_up
from tests.providers.gateway.conftest import (
    ALREADY_GOING,
    restart_runner,
    runner_said,
    start_openclaw,
    start_stack,
)
from tests.providers.real_cli_loss import (
    BEFORE,
    HOLD,
    assert_no_second_look,
    assert_resumed_once,
    lost_turn_steps,
    session_reported,
    turns,
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
from tests.support.model_endpoint_script import FunctionCall, Step, Usage, calls, reply, say
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.gateway_cli]


def tool(name: str, arguments: dict | None = None) -> FunctionCall:
    return FunctionCall(f"paperclip__{name}", arguments or {})


OPENCLAW_RECOVERY = "[System] Your previous turn was interrupted by a gateway restart"
"""The prompt of OpenClaw's own resumption of a session it had running when it was killed
(its main-session restart recovery, once it is ready again; docs/providers/gateway.md)."""
OPENCLAW_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
"""The user message OpenClaw appends to each model request (its internal context)."""


def is_openclaw_recovery(received) -> bool:
    """Whether the request is of OpenClaw's own restart recovery: the newest user message
    (past OpenClaw's internal context) is OpenClaw's prompt, not a Paperclip one."""
    texts = [t for t in received.user_texts() if not t.lstrip().startswith(OPENCLAW_CONTEXT)]
    return bool(texts) and OPENCLAW_RECOVERY in texts[-1]


def past_openclaw_recovery(steps: list[Step], restarts: int) -> list[Step]:
    """``steps`` as the answers to Paperclip's requests, in order. Whether OpenClaw's recovery
    of the session asks the model first depends on which of it and the continuation starts
    first (the one that loses is refused or waits); when it does, it gets prose and no tool
    call, and the script does not move on."""
    pending = list(steps)

    def respond(received) -> Step:
        if is_openclaw_recovery(received):
            return say("Waiting for the task to go on.")
        assert pending, "a request past the script"
        return pending.pop(0)

    return [reply(respond) for _ in range(len(steps) + restarts)]


def start(stack, endpoint: ModelEndpoint, steps: list) -> dict:
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    endpoint.script(model, steps)
    start_stack(stack, start_openclaw(stack.tmp, endpoint, model))
    ctx = stack.setup_issue(
        {}, provider_config={"session_key_strategy": "issue"}, provider="gateway"
    )
    ctx["model"] = model
    return ctx


def test_a_run_calls_our_tools_through_the_gateway_and_succeeds(gateway_stack, model_endpoint):
    steps = [
        calls(tool("get_task_context")),
        calls(tool("post_comment", {"body": "Looking at it."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"})),
        say("Done."),
    ]
    ctx = start(gateway_stack, model_endpoint, steps)
    gateway_stack.assign(ctx)
    run = gateway_stack.wait_for_terminal_run(ctx, timeout=WAIT)

    run = assert_succeeded_once(gateway_stack, ctx, run, "Looking at it.")
    assert run["answer"] == "Done."
    assert_each_tool_once(gateway_stack, run["id"])
    requests = model_endpoint.scripted(ctx["model"])
    assert len(requests) == 4 and model_endpoint.exhausted(ctx["model"]) == []
    assert "Fix the build" in json.dumps(requests[1].tool_outputs())
    assert {"paperclip__get_task_context", "paperclip__finish"} <= set(requests[0].tool_names())
    # The rules ride in the agent request's extraSystemPrompt, not in the message.
    system = requests[0].body["messages"][0]
    assert system["role"] in ("system", "developer") and "## Paperclip rules" in str(
        system["content"]
    )
    assert not any("## Paperclip rules" in text for text in requests[0].user_texts())
    # One gateway run, keyed by the run id, on the issue's session.
    events = gateway_stack.events(ctx, run["id"])
    run_ids = {e["payload"]["runId"] for e in events if e["type"].startswith("agent.")}
    assert run_ids == {run["id"]}
    assert {e["payload"]["sessionKey"] for e in events if e["type"].startswith("agent.")} == {
        f"agent:main:paperclip:issue:{ctx['issue']['id']}"
    }


def test_a_follow_up_during_a_slow_step_is_answered_in_the_same_turn(gateway_stack, model_endpoint):
    steps = [
        calls(tool("get_task_context")),
        say("Reading the task.", hold="slow-step"),  # ends the first gateway run
        calls(tool("post_comment", {"body": "Changelog mentioned."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"})),
        say("Done, with the changelog."),
    ]
    ctx = start(gateway_stack, model_endpoint, steps)
    set_price(gateway_stack, ctx["model"])
    gateway_stack.assign(ctx)
    gate = model_endpoint.gate("slow-step")
    gate.wait_reached(WAIT)
    (run,) = gateway_stack.runs(ctx)

    answer = steer_and_wait(gateway_stack, ctx, run["id"], "steer-1", "Also mention the changelog.")
    assert answer == "steering_acknowledgement"
    gate.release()
    run = gateway_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(gateway_stack, ctx, run, "Changelog mentioned.")
    later = [r for r in model_endpoint.scripted(ctx["model"]) if r.step is not None and r.step >= 2]
    assert later and all(
        any("Also mention the changelog." in text for text in r.user_texts()) for r in later
    )
    events = gateway_stack.events(ctx, run["id"])
    run_ids = {e["payload"]["runId"] for e in events if e["type"].startswith("agent.")}
    assert run_ids == {run["id"], f"{run['id']}:follow-up:steer-1"}
    # Each gateway run's usage, from its own request's final answer.
    sent = model_endpoint.usage_sent(ctx["model"])
    recorded = assert_usage_recorded(
        gateway_stack, ctx, run["id"], sent, per_response=False, runs=2
    )
    assert {e["key"] for e in recorded} == run_ids


def test_sigkill_of_the_control_plane_during_a_slow_step_has_no_duplicate_effect(
    gateway_stack, model_endpoint
):
    steps = [
        calls(tool("get_task_context")),
        calls(tool("post_comment", {"body": "Before the restart."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"}), hold="slow-finish"),
        say("Done."),
    ]
    ctx = start(gateway_stack, model_endpoint, steps)
    set_price(gateway_stack, ctx["model"])
    gateway_stack.assign(ctx)
    gate = model_endpoint.gate("slow-finish")
    gate.wait_reached(WAIT)

    restart_control_plane(gateway_stack)
    gate.release()

    run = gateway_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(gateway_stack, ctx, run, "Before the restart.")
    assert run["controller_epoch"] >= 2
    assert_each_tool_once(gateway_stack, run["id"])
    assert_log_is_clean(gateway_stack, ctx, run)
    # The gateway run's usage, from its final answer, counted once across the restart.
    sent = model_endpoint.usage_sent(ctx["model"])
    assert_usage_recorded(gateway_stack, ctx, run["id"], sent, per_response=False)


def test_a_refused_finish_is_corrected_in_the_same_turn(gateway_stack, model_endpoint):
    ctx = start(gateway_stack, model_endpoint, guard_model_steps(tool))
    run = run_guard_correction(gateway_stack, ctx)
    assert_model_followed_the_correction(model_endpoint, ctx["model"])
    events = gateway_stack.events(ctx, run["id"])
    assert {e["payload"]["runId"] for e in events if e["type"].startswith("agent.")} == {run["id"]}


def test_the_usage_the_control_plane_records_is_what_the_model_sent(gateway_stack, model_endpoint):
    """The gateway run's usage, from its agent request's final answer (its events carry only
    output tokens): one cost event summing the run's model calls, priced from the price table
    (OpenClaw has no price for the scripted model: its cost is 0)."""
    steps = [
        calls(tool("get_task_context"), usage=Usage(48_000, 310, 40_000, 120)),
        calls(tool("post_comment", {"body": "Looking at it."})),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed it"})),
        say("Done."),
    ]
    ctx = start(gateway_stack, model_endpoint, steps)
    set_price(gateway_stack, ctx["model"])
    gateway_stack.assign(ctx)
    run = gateway_stack.wait_for_terminal_run(ctx, timeout=WAIT)

    assert_succeeded_once(gateway_stack, ctx, run, "Looking at it.")
    sent = model_endpoint.usage_sent(ctx["model"])
    assert len(sent) == len(steps) and sent[0] == Usage(48_000, 310, 40_000, 120)
    (event,) = assert_usage_recorded(gateway_stack, ctx, run["id"], sent, per_response=False)
    assert event["key"] == run["id"]  # the gateway run is the Paperclip run's


def test_everything_sigkilled_mid_turn_goes_on_in_the_gateway_session(
    gateway_stack, model_endpoint
):
    """Issue 37, acceptance 1: control plane, runner and the OpenClaw gateway SIGKILLed while
    the model is held after its comment; all started again. The continuation is a new agent
    request (its own idempotency key) on the same session key: the model, which does not look
    at the task again, finishes with the one comment."""
    steps = past_openclaw_recovery(lost_turn_steps(tool), restarts=1)
    ctx = start(gateway_stack, model_endpoint, steps)
    gateway_stack.assign(ctx)
    gate = model_endpoint.gate(HOLD)
    gate.wait_reached(WAIT)
    run_id = gateway_stack.runs(ctx)[0]["id"]
    session = session_reported(gateway_stack, run_id)

    gateway = gateway_stack.gateway
    os.killpg(gateway.process.pid, signal.SIGKILL)
    gateway.process.wait(10)
    gateway_stack.servers[0].kill()
    gateway_stack.runner.proc.send_signal(signal.SIGKILL)
    gateway_stack.runner.proc.wait(10)
    gate.release()  # the held answer goes to a gateway that is gone
    gateway_stack.start_server()
    gateway_stack.start_runner(
        launch={"gateway": {"default": gateway.profile()}}, env=gateway.runner_env()
    )
    openclaw_after_the_continuation(gateway_stack, model_endpoint, ctx["model"], run_id, 2)

    run = assert_resumed_once(gateway_stack, ctx, run_id)
    assert turns(gateway_stack, run_id)[1]["session_ref"] == session
    assert_each_tool_once(gateway_stack, run["id"])
    assert_no_second_look(model_endpoint, ctx["model"])
    # The same session: the continuation's request holds the first turn's comment call.
    after = [r for r in model_endpoint.scripted(ctx["model"])[3:] if not is_openclaw_recovery(r)]
    assert BEFORE in json.dumps(after[0].body["messages"])


def test_a_runner_lost_mid_turn_with_the_gateway_up_goes_on_in_a_request_of_its_own(
    gateway_stack, model_endpoint
):
    """The gateway outlives the runner: its run of the lost turn is still going when the
    continuation is asked for. Sent with the run id again, OpenClaw answered with that run
    and the continuation never ran (``finish_not_called``); with its own key it is queued
    in the session after the old run, and finishes."""
    ctx = start(gateway_stack, model_endpoint, lost_turn_steps(tool))
    gateway_stack.assign(ctx)
    gate = model_endpoint.gate(HOLD)
    gate.wait_reached(WAIT)
    run_id = gateway_stack.runs(ctx)[0]["id"]
    session_reported(gateway_stack, run_id)

    gateway_stack.servers[0].kill()
    gateway_stack.runner.proc.send_signal(signal.SIGKILL)
    gateway_stack.runner.proc.wait(10)
    gateway_stack.start_server()
    gateway = gateway_stack.gateway
    gateway_stack.start_runner(
        launch={"gateway": {"default": gateway.profile()}}, env=gateway.runner_env()
    )
    wait_until(
        lambda: (
            [(r["number"], r["status"]) for r in turns(gateway_stack, run_id)][1:]
            == [(2, "running")]
        ),
        WAIT,
        message="the continuation running",
    )
    gate.release()  # the old gateway run answers with prose and ends

    run = assert_resumed_once(gateway_stack, ctx, run_id)
    assert_each_tool_once(gateway_stack, run["id"])
    assert_no_second_look(model_endpoint, ctx["model"])


def test_a_runner_lost_twice_learns_the_end_of_the_gateway_run_it_left(
    gateway_stack, model_endpoint
):
    """The gateway outlives two runners. The second continuation's request is the first's
    (the same prompt, the same key): OpenClaw answers it ``in_flight``, once, and never with
    the run's end, so the driver asks ``agent.wait``. The run ends once, succeeded, with
    one comment; no step of the model is asked twice."""
    steps = [
        calls(tool("get_task_context")),
        calls(tool("post_comment", {"body": BEFORE})),
        say("Thinking about the fix.", hold="first"),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed after the loss"}), hold=HOLD),
        say("Done after the loss."),
    ]
    ctx = start(gateway_stack, model_endpoint, steps)
    gateway_stack.assign(ctx)
    first = model_endpoint.gate("first")
    first.wait_reached(WAIT)
    run_id = gateway_stack.runs(ctx)[0]["id"]
    session_reported(gateway_stack, run_id)

    restart_runner(gateway_stack)
    wait_until(lambda: len(turns(gateway_stack, run_id)) == 2, WAIT, message="a continuation")
    first.release()  # the lost turn's gateway run ends; the continuation's is next
    second = model_endpoint.gate(HOLD)
    second.wait_reached(WAIT)
    restart_runner(gateway_stack)
    wait_until(
        lambda: runner_said(gateway_stack, ALREADY_GOING),
        WAIT,
        message="the third turn asking for the end of the gateway run it was answered with",
    )
    second.release()

    run = gateway_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), gateway_stack.runner.tail()
    assert [(t["number"], t["status"]) for t in turns(gateway_stack, run_id)] == [
        (1, "lost"),
        (2, "lost"),
        (3, "completed"),
    ]
    run = assert_succeeded_once(gateway_stack, ctx, run, BEFORE)
    assert run["answer"] == "Done after the loss."
    assert_each_tool_once(gateway_stack, run["id"])
    assert_no_second_look(model_endpoint, ctx["model"])


def test_an_unread_follow_up_is_read_once_across_two_restarts(gateway_stack, model_endpoint):
    """Issue 37, acceptance 2: a follow-up queued behind the held gateway run (acknowledged,
    not read), then the runner and OpenClaw SIGKILLed twice. The first continuation carries
    the steer; once its gateway run started, the second carries nothing; the follow-up
    itself never reaches the model."""
    steps = [
        calls(tool("get_task_context")),
        say("Thinking about the fix.", hold="first"),
        say("Working on it, with the changelog.", hold="second"),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed, changelog included"})),
        say("Done, changelog included."),
    ]
    ctx = start(gateway_stack, model_endpoint, past_openclaw_recovery(steps, restarts=2))
    gateway_stack.assign(ctx)
    first = model_endpoint.gate("first")
    first.wait_reached(WAIT)
    run_id = gateway_stack.runs(ctx)[0]["id"]
    session_reported(gateway_stack, run_id)
    follow_up(gateway_stack, ctx, run_id)  # queued behind the held run: unread

    kill_runner_and_openclaw(gateway_stack, model_endpoint, ctx["model"], first, run_id, 2)
    second = model_endpoint.gate("second")
    second.wait_reached(WAIT)
    wait_until(
        lambda: any(turn == 2 for turn, _ in gateway_runs_started(gateway_stack, ctx, run_id)),
        WAIT,
        message="the second turn's gateway run going, in the log",
    )
    kill_runner_and_openclaw(gateway_stack, model_endpoint, ctx["model"], second, run_id, 3)

    run = gateway_stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), gateway_stack.runner.tail()
    rows = turn_rows(gateway_stack, run_id)
    assert [(t["number"], t["kind"]) for t in rows] == [
        (1, "initial"),
        (2, "continuation"),
        (3, "continuation"),
    ]
    assert rows[1]["input"]["prompt"].count(STEER) == 1
    assert STEER not in rows[2]["input"]["prompt"]
    # The conversation the model was given holds the steer at most once, and did hold it.
    requests = model_endpoint.scripted(ctx["model"])
    held = [sum(t.count(STEER) for t in r.user_texts()) for r in requests]
    assert max(held) == 1 and held[:2] == [0, 0], held
    assert not any(t.strip() == STEER for r in requests for t in r.user_texts())
    assert model_endpoint.exhausted(ctx["model"]) == []


def gateway_runs_started(stack, ctx, run_id: str) -> list[tuple[int, str]]:
    """(turn, gateway run id) of every gateway run whose lifecycle the log holds (after a
    restart OpenClaw may send a run's ``start`` before the driver hears it: any phase)."""
    return [
        (e["turn"], e["payload"]["runId"])
        for e in stack.events(ctx, run_id)
        if e["type"] == "agent.lifecycle"
    ]


def kill_runner_and_openclaw(stack, endpoint, model: str, gate, run_id: str, turn: int) -> None:
    """SIGKILL the runner and OpenClaw (the held answer then goes nowhere); start both again,
    OpenClaw once ``turn`` waits for it."""
    gateway = stack.gateway
    os.killpg(gateway.process.pid, signal.SIGKILL)
    gateway.process.wait(10)
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    gate.release()
    stack.start_runner(launch={"gateway": {"default": gateway.profile()}}, env=gateway.runner_env())
    openclaw_after_the_continuation(stack, endpoint, model, run_id, turn)


def openclaw_after_the_continuation(stack, endpoint, model: str, run_id: str, turn: int) -> None:
    """Start OpenClaw again once the continuation ``turn`` runs: its driver then holds the tool
    relay while OpenClaw, ready, resumes the session by itself. The other order (OpenClaw's
    recovery before any turn serves the tools) leaves the session without them: see
    docs/providers/gateway.md, Restarts."""
    wait_until(
        lambda: [(t["number"], t["status"]) for t in turns(stack, run_id)][-1] == (turn, "running"),
        WAIT,
        message=f"turn {turn} waiting for the gateway",
    )
    start_openclaw(stack.tmp, endpoint, model, stack.gateway)
