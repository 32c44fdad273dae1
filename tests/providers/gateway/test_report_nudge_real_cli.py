"""The report nudge on a real OpenClaw gateway (pinned, from npm), the model scripted.

A model that ends its turn in prose gets the nudge as an agent request of its
own on the same session (the real-CLI suite's scenario, in test_real_cli.py).
Here, the gateway's own: a ``finish`` the model makes while the runner is away
(the gateway outlives it) never reaches Paperclip, so the continuation says no
report is recorded and the nudge asks for it (docs/decisions/0004).
"""

from __future__ import annotations

import json
import signal

import pytest

from tests.providers.gateway.provider import GATEWAY
from tests.providers.real_cli_loss import session_reported, turns
from tests.providers.report_nudge import COMMENT, PROSE
from tests.providers.scenarios import WAIT, assert_succeeded_once, journal
from tests.support.model_endpoint_script import Step, calls, reply, say
from tests.support.processes import wait_until

pytestmark = [
    pytest.mark.process,
    pytest.mark.installed_plugins,
    pytest.mark.gateway_cli,
    pytest.mark.long_run,
]


FINISH_STEP_SECONDS = 5.0
"""The model's step before its finish: the runner and the control plane are killed in it."""


def test_a_finish_made_while_the_runner_was_away_is_reported_in_the_same_session(
    gateway_stack, model_endpoint
):
    """Issue 53, acceptance 1: the gateway outlives the runner. The model comments, takes a
    5-second step, and calls finish while the control plane and the runner are SIGKILLed:
    the call meets the runner's relay down (a tool error in the model's conversation), the
    model ends its turn in prose. The model never looks at the task again and answers the
    continuation in prose too; the report nudge asks for the report it lacks, in the same
    gateway session, and the run succeeds with its one comment."""
    finished = []

    def finish_or_say(received) -> Step:
        # A model that does not re-check its work: it reports only when asked to report.
        asked = any("your report is missing" in t for t in received.user_texts())
        if asked and not finished:
            finished.append(received)
            return calls(GATEWAY.tool("finish", {"outcome": "done", "summary": COMMENT}))
        return say("Reported." if finished else f"Already done: {PROSE}")

    steps = [
        calls(GATEWAY.tool("get_task_context")),
        calls(GATEWAY.tool("post_comment", {"body": COMMENT})),
        calls(
            GATEWAY.tool("finish", {"outcome": "done", "summary": COMMENT}),
            delay=FINISH_STEP_SECONDS,
        ),
        *[reply(finish_or_say) for _ in range(6)],
    ]
    ctx = GATEWAY.real_agent(gateway_stack, model_endpoint, steps)
    gateway_stack.assign(ctx)
    run_id = wait_until(
        lambda: next((r["id"] for r in gateway_stack.runs(ctx)), None), WAIT, message="the run"
    )
    session = session_reported(gateway_stack, run_id)
    model_endpoint.wait_for(
        lambda: model_endpoint.position(ctx["model"]) >= 3, WAIT, "the slow step before finish"
    )
    gateway_stack.servers[0].kill()
    gateway_stack.runner.proc.send_signal(signal.SIGKILL)
    gateway_stack.runner.proc.wait(10)
    gateway = gateway_stack.gateway
    # The finish reaches the relay while nothing listens: OpenClaw's MCP call is refused.
    wait_until(
        lambda: "ECONNREFUSED" in gateway.log_path.read_text(errors="replace"),
        WAIT,
        message="the refused finish call",
    )
    gateway_stack.start_server()
    gateway_stack.start_runner(
        launch={"gateway": {"default": gateway.profile()}}, env=gateway.runner_env()
    )

    run = gateway_stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
    assert run["status"] == "succeeded", (run, gateway_stack.runner.tail())
    rows = turns(gateway_stack, run_id)
    assert [(r["kind"], r["status"]) for r in rows][-1] == ("report_nudge", "completed"), rows
    assert {r["session_ref"] for r in rows} == {session}, rows
    assert_succeeded_once(gateway_stack, ctx, run, COMMENT)
    finishes = [c for c in journal(gateway_stack, run_id) if c["tool"] == "finish"]
    assert [c["is_error"] for c in finishes] == [False]  # the refused one never reached us
    assert not any(
        "get_task_context" in json.dumps(r.body.get("messages", [])[-1:])
        for r in model_endpoint.scripted(ctx["model"])[3:]
    )
