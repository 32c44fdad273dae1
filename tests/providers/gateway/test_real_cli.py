"""A real OpenClaw gateway (pinned, from npm, on Node 24) driven by Paperclip, the model scripted.

The scenarios are tests/providers/real_cli_suite.py's; what the gateway does
its own way is in its description, tests/providers/gateway/provider.py. A
gateway takes ~10 s to start, so each scenario starts one. A gateway outlives
a runner, and OpenClaw resumes a session it had running by itself when it is
started again: the restarts below are the gateway's own.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from tests.engine.test_steer_restarts import STEER, turn_rows
from tests.engine.test_steer_restarts_opencode import follow_up
from tests.providers.gateway.conftest import (
    ALREADY_GOING,
    restart_runner,
    runner_said,
    start_openclaw,
)
from tests.providers.gateway.provider import GATEWAY
from tests.providers.real_cli_loss import (
    BEFORE,
    HOLD,
    assert_no_second_look,
    assert_resumed_once,
    lost_turn_steps,
    session_reported,
    turns,
)
from tests.providers.real_cli_suite import RealCliSuite
from tests.providers.scenarios import WAIT, assert_each_tool_once, assert_succeeded_once
from tests.support.model_endpoint_script import Step, calls, reply, say
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.gateway_cli]


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
    GATEWAY.start_runner(stack)
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


class TestRealCli(RealCliSuite):
    provider = GATEWAY

    def test_everything_sigkilled_mid_turn_resumes_the_cli_session(self, stack, model_endpoint):
        """Issue 37, acceptance 1: control plane, runner and the OpenClaw gateway SIGKILLed while
        the model is held after its comment; all started again. The continuation is a new agent
        request (its own idempotency key) on the same session key: the model, which does not look
        at the task again, finishes with the one comment."""
        steps = past_openclaw_recovery(lost_turn_steps(GATEWAY.tool), restarts=1)
        ctx = GATEWAY.real_agent(stack, model_endpoint, steps)
        stack.assign(ctx)
        gate = model_endpoint.gate(HOLD)
        gate.wait_reached(WAIT)
        run_id = stack.runs(ctx)[0]["id"]
        session = session_reported(stack, run_id)

        gateway = stack.gateway
        os.killpg(gateway.process.pid, signal.SIGKILL)
        gateway.process.wait(10)
        stack.servers[0].kill()
        stack.runner.proc.send_signal(signal.SIGKILL)
        stack.runner.proc.wait(10)
        gate.release()  # the held answer goes to a gateway that is gone
        stack.start_server()
        GATEWAY.start_runner(stack)
        openclaw_after_the_continuation(stack, model_endpoint, ctx["model"], run_id, 2)

        run = assert_resumed_once(stack, ctx, run_id)
        assert turns(stack, run_id)[1]["session_ref"] == session
        assert_each_tool_once(stack, run["id"])
        assert_no_second_look(model_endpoint, ctx["model"])
        # The same session: the continuation's request holds the first turn's comment call.
        after = [
            r for r in model_endpoint.scripted(ctx["model"])[3:] if not is_openclaw_recovery(r)
        ]
        assert BEFORE in json.dumps(after[0].body["messages"])

    @pytest.mark.long_run
    def test_an_unread_message_is_read_once_across_two_restarts(self, stack, model_endpoint):
        """Issue 37, acceptance 2: a follow-up queued behind the held gateway run (acknowledged,
        not read), then the runner and OpenClaw SIGKILLed twice. The first continuation carries
        the steer; once its gateway run started, the second carries nothing; the follow-up
        itself never reaches the model."""
        steps = [
            calls(GATEWAY.tool("get_task_context")),
            say("Thinking about the fix.", hold="first"),
            say("Working on it, with the changelog.", hold="second"),
            calls(
                GATEWAY.tool("finish", {"outcome": "done", "summary": "Fixed, changelog included"})
            ),
            say("Done, changelog included."),
        ]
        ctx = GATEWAY.real_agent(stack, model_endpoint, past_openclaw_recovery(steps, restarts=2))
        stack.assign(ctx)
        first = model_endpoint.gate("first")
        first.wait_reached(WAIT)
        run_id = stack.runs(ctx)[0]["id"]
        session_reported(stack, run_id)
        follow_up(stack, ctx, run_id)  # queued behind the held run: unread

        kill_runner_and_openclaw(stack, model_endpoint, ctx["model"], first, run_id, 2)
        second = model_endpoint.gate("second")
        second.wait_reached(WAIT)
        wait_until(
            lambda: any(turn == 2 for turn, _ in gateway_runs_started(stack, ctx, run_id)),
            WAIT,
            message="the second turn's gateway run going, in the log",
        )
        kill_runner_and_openclaw(stack, model_endpoint, ctx["model"], second, run_id, 3)

        run = stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
        assert (run["id"], run["status"]) == (run_id, "succeeded"), stack.runner.tail()
        rows = turn_rows(stack, run_id)
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


@pytest.mark.long_run
def test_a_runner_lost_mid_turn_with_the_gateway_up_goes_on_in_a_request_of_its_own(
    stack, model_endpoint
):
    """The gateway outlives the runner: its run of the lost turn is still going when the
    continuation is asked for. Sent with the run id again, OpenClaw answered with that run
    and the continuation never ran (``finish_not_called``); with its own key it is queued
    in the session after the old run, and finishes."""
    ctx = GATEWAY.real_agent(stack, model_endpoint, lost_turn_steps(GATEWAY.tool))
    stack.assign(ctx)
    gate = model_endpoint.gate(HOLD)
    gate.wait_reached(WAIT)
    run_id = stack.runs(ctx)[0]["id"]
    session_reported(stack, run_id)

    stack.servers[0].kill()
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    stack.start_server()
    GATEWAY.start_runner(stack)
    wait_until(
        lambda: [(r["number"], r["status"]) for r in turns(stack, run_id)][1:] == [(2, "running")],
        WAIT,
        message="the continuation running",
    )
    gate.release()  # the old gateway run answers with prose and ends

    run = assert_resumed_once(stack, ctx, run_id)
    assert_each_tool_once(stack, run["id"])
    assert_no_second_look(model_endpoint, ctx["model"])


@pytest.mark.long_run
def test_a_runner_lost_twice_learns_the_end_of_the_gateway_run_it_left(stack, model_endpoint):
    """The gateway outlives two runners. The second continuation's request is the first's
    (the same prompt, the same key): OpenClaw answers it ``in_flight``, once, and never with
    the run's end, so the driver asks ``agent.wait``. The run ends once, succeeded, with
    one comment; no step of the model is asked twice."""
    steps = [
        calls(GATEWAY.tool("get_task_context")),
        calls(GATEWAY.tool("post_comment", {"body": BEFORE})),
        say("Thinking about the fix.", hold="first"),
        calls(
            GATEWAY.tool("finish", {"outcome": "done", "summary": "Fixed after the loss"}),
            hold=HOLD,
        ),
        say("Done after the loss."),
    ]
    ctx = GATEWAY.real_agent(stack, model_endpoint, steps)
    stack.assign(ctx)
    first = model_endpoint.gate("first")
    first.wait_reached(WAIT)
    run_id = stack.runs(ctx)[0]["id"]
    session_reported(stack, run_id)

    restart_runner(stack)
    wait_until(lambda: len(turns(stack, run_id)) == 2, WAIT, message="a continuation")
    first.release()  # the lost turn's gateway run ends; the continuation's is next
    second = model_endpoint.gate(HOLD)
    second.wait_reached(WAIT)
    restart_runner(stack)
    wait_until(
        lambda: runner_said(stack, ALREADY_GOING),
        WAIT,
        message="the third turn asking for the end of the gateway run it was answered with",
    )
    second.release()

    run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), stack.runner.tail()
    assert [(t["number"], t["status"]) for t in turns(stack, run_id)] == [
        (1, "lost"),
        (2, "lost"),
        (3, "completed"),
    ]
    run = assert_succeeded_once(stack, ctx, run, BEFORE)
    assert run["answer"] == "Done after the loss."
    assert_each_tool_once(stack, run["id"])
    assert_no_second_look(model_endpoint, ctx["model"])
