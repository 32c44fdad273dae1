"""The scenarios every provider runs through Paperclip against its pinned real CLI.

A provider's ``test_real_cli.py`` runs them by naming its description, under its
marker (its tox env installs the CLI)::

    pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.pi_cli]

    class TestRealCli(RealCliSuite):
        provider = PI

The model is a scripted endpoint (the ``model_endpoint`` fixture). A provider
whose CLI goes its own way through a scenario overrides that test in its class,
under the same name, and says why (and marks it ``long_run`` as the suite does).

CI runs the scenarios of one run and of everything SIGKILLed; those marked
``long_run`` (restarts of one part, steers, report nudges, each tried on
every provider's fake in CI) run before a release, with all of them:
``./dev test -e <provider>-cli -- -m <provider>_cli`` (docs/testing.md).
"""

from __future__ import annotations

import json
from typing import ClassVar

import pytest

from tests.engine.test_steer_restarts import STEER, turn_rows
from tests.providers.description import ProviderUnderTest
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
    guard_model_steps,
    restart_control_plane,
    run_guard_correction,
    set_price,
    steer_and_wait,
)
from tests.support.model_endpoint_script import Usage, calls, say
from tests.support.processes import wait_until

STEERED = "Also mention the changelog."
SENT_USAGE = Usage(48_000, 310, 40_000, 120)


class RealCliSuite:
    """The scenarios every provider runs against its pinned real CLI."""

    provider: ClassVar[ProviderUnderTest]

    def tools_then_finish(self, **finish_options) -> list:
        tool = self.provider.tool
        return [
            calls(tool("get_task_context")),
            calls(tool("post_comment", {"body": "Looking at it."})),
            calls(tool("finish", {"outcome": "done", "summary": "Fixed it"}), **finish_options),
            say("Done."),
        ]

    def test_a_run_calls_our_tools_and_succeeds(self, stack, model_endpoint):
        ctx = self.provider.real_agent(stack, model_endpoint, self.tools_then_finish())
        stack.assign(ctx)
        run = stack.wait_for_terminal_run(ctx, timeout=WAIT)

        run = assert_succeeded_once(stack, ctx, run, "Looking at it.")
        assert run["answer"] == "Done."
        assert_each_tool_once(stack, run["id"])
        assert len(self.provider.prompts(stack, ctx, run)) == 1
        requests = model_endpoint.scripted(ctx["model"])
        assert len(requests) == 4 and model_endpoint.exhausted(ctx["model"]) == []
        assert "Fix the build" in json.dumps(requests[1].tool_outputs())
        offered = set(requests[0].tool_names())
        assert {self.provider.tool(t).name for t in ("get_task_context", "finish")} <= offered
        # The standing rules ride as the CLI's system text, not in the user prompt.
        system = requests[0].body["messages"][0]
        assert system["role"] in ("system", "developer"), system
        assert "## Paperclip rules" in str(system["content"])
        assert not any("## Paperclip rules" in text for text in requests[0].user_texts())
        self.provider.check_first_request(requests[0])

    @pytest.mark.long_run
    def test_a_message_during_a_slow_step_is_answered_in_the_same_turn(self, stack, model_endpoint):
        tool, steers = self.provider.tool, self.provider.steers
        comment = tool("post_comment", {"body": "Changelog mentioned."})
        steps = [
            calls(tool("get_task_context")),
            # A steer is read before the model's next call; a follow-up once the prompt ends.
            calls(comment, hold="slow-step")
            if steers
            else say("Reading the task.", hold="slow-step"),
            *([] if steers else [calls(comment)]),
            calls(tool("finish", {"outcome": "done", "summary": "Fixed it"})),
            say("Done, with the changelog."),
        ]
        ctx = self.provider.real_agent(stack, model_endpoint, steps)
        set_price(stack, ctx["model"])
        stack.assign(ctx)
        gate = model_endpoint.gate("slow-step")
        gate.wait_reached(WAIT)
        (run,) = stack.runs(ctx)

        assert steer_and_wait(stack, ctx, run["id"], "steer-1", STEERED) == (
            "steering_acknowledgement"
        )
        gate.release()
        run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
        assert_succeeded_once(stack, ctx, run, "Changelog mentioned.")

        # Every request after the message carries it; the ones before it do not.
        requests = model_endpoint.scripted(ctx["model"])
        later = [r for r in requests if r.step is not None and r.step >= 2]
        assert later and all(self.provider.holds_text(r, STEERED) for r in later)
        assert not any(STEERED in r.user_texts() for r in requests[:2])
        prompts = self.provider.prompts(stack, ctx, run)
        assert len(prompts) == (1 if steers else 2), prompts  # one turn
        self.provider.check_steered(stack, ctx, run, STEERED)
        # A follow-up's answers are the turn's too: every response counted, once.
        sent = model_endpoint.usage_sent(ctx["model"])
        self.provider.assert_usage(stack, ctx, run, sent, prompts=len(prompts))

    @pytest.mark.long_run
    def test_sigkill_of_the_control_plane_during_a_slow_step_has_no_duplicate_effect(
        self, stack, model_endpoint
    ):
        tool = self.provider.tool
        steps = [
            calls(tool("get_task_context")),
            calls(tool("post_comment", {"body": "Before the restart."})),
            calls(tool("finish", {"outcome": "done", "summary": "Fixed it"}), hold="slow-finish"),
            say("Done."),
        ]
        ctx = self.provider.real_agent(stack, model_endpoint, steps)
        set_price(stack, ctx["model"])
        stack.assign(ctx)
        gate = model_endpoint.gate("slow-finish")
        gate.wait_reached(WAIT)

        restart_control_plane(stack)
        gate.release()  # the model answers while the restarted control plane adopts the run

        run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
        assert_succeeded_once(stack, ctx, run, "Before the restart.")
        assert run["controller_epoch"] >= 2
        assert_each_tool_once(stack, run["id"])
        assert_log_is_clean(stack, ctx, run)
        # Usage reported before the restart and replayed after it is counted once.
        self.provider.assert_usage(stack, ctx, run, model_endpoint.usage_sent(ctx["model"]))

    def test_a_refused_finish_is_corrected_in_the_same_turn(self, stack, model_endpoint):
        steps = guard_model_steps(self.provider.tool)
        ctx = self.provider.real_agent(stack, model_endpoint, steps)
        run = run_guard_correction(stack, ctx)
        assert_model_followed_the_correction(model_endpoint, ctx["model"])
        assert len(self.provider.prompts(stack, ctx, run)) == 1  # the correction within it

    def test_the_usage_the_control_plane_records_is_what_the_model_sent(
        self, stack, model_endpoint
    ):
        """Each response's tokens, as the CLI reports them, recorded once and priced from the
        price table (no CLI here knows a price for the scripted model)."""
        steps = self.tools_then_finish()
        steps[0] = calls(*steps[0].outputs, usage=SENT_USAGE)
        ctx = self.provider.real_agent(stack, model_endpoint, steps)
        set_price(stack, ctx["model"])
        stack.assign(ctx)
        run = stack.wait_for_terminal_run(ctx, timeout=WAIT)

        assert_succeeded_once(stack, ctx, run, "Looking at it.")
        sent = model_endpoint.usage_sent(ctx["model"])
        assert len(sent) == len(steps) and sent[0] == SENT_USAGE
        self.provider.assert_usage(stack, ctx, run, sent)

    def test_everything_sigkilled_mid_turn_resumes_the_cli_session(self, stack, model_endpoint):
        """Issue 37, acceptance 1: the model does not look at the task again; only the resumed
        session (which holds its comment) keeps the comment to one."""
        ctx = self.provider.real_agent(stack, model_endpoint, lost_turn_steps(self.provider.tool))
        stack.assign(ctx)
        gate = model_endpoint.gate(HOLD)
        gate.wait_reached(WAIT)
        run_id = stack.runs(ctx)[0]["id"]
        session = session_reported(stack, run_id)

        kill_everything(stack, lambda: self.provider.start_runner(stack))
        gate.release()  # the held answer goes to a CLI that is gone

        run = assert_resumed_once(stack, ctx, run_id)
        assert turns(stack, run_id)[1]["session_ref"] == session
        assert_each_tool_once(stack, run["id"])
        assert_no_second_look(model_endpoint, ctx["model"])
        # Resumed: the continuation's request holds the first turn's comment call.
        after = model_endpoint.scripted(ctx["model"])[3]
        assert BEFORE in json.dumps(after.body["messages"])

    @pytest.mark.long_run
    def test_an_unread_message_is_read_once_across_two_restarts(self, stack, model_endpoint):
        """Issue 37, acceptance 2: a message acknowledged in the CLI's queue, unread, then
        everything SIGKILLed twice: the model is given it exactly once."""
        tool = self.provider.tool
        steps = [
            calls(tool("get_task_context")),
            say("Reading the task.", hold="first"),  # the message waits in the CLI's queue
            say("Thinking about the changelog.", hold="second"),  # the message was read
            calls(tool("post_comment", {"body": BEFORE})),
            calls(tool("finish", {"outcome": "done", "summary": "Fixed, changelog included"})),
            say("Done, changelog included."),
        ]
        ctx = self.provider.real_agent(stack, model_endpoint, steps)
        stack.assign(ctx)
        first = model_endpoint.gate("first")
        first.wait_reached(WAIT)
        run_id = stack.runs(ctx)[0]["id"]
        session_reported(stack, run_id)
        self.provider.send_unread(stack, ctx, run_id)

        kill_everything(stack, lambda: self.provider.start_runner(stack))
        first.release()
        second = model_endpoint.gate("second")
        second.wait_reached(WAIT)
        wait_until(
            lambda: self.provider.read_in_second_turn(stack, ctx, run_id),
            WAIT,
            message="the second turn's prompt, with the message, being answered",
        )
        kill_everything(stack, lambda: self.provider.start_runner(stack))
        second.release()

        run = stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
        assert (run["id"], run["status"]) == (run_id, "succeeded"), (run, stack.runner.tail())
        rows = turn_rows(stack, run_id)
        assert [(r["number"], r["kind"]) for r in rows] == [
            (1, "initial"),
            (2, "continuation"),
            (3, "continuation"),
        ], rows
        assert rows[1]["input"]["prompt"].count(STEER) == 1
        assert STEER not in rows[2]["input"]["prompt"]
        self.provider.check_read_once(stack, ctx, run_id, model_endpoint)
        assert_succeeded_once(stack, ctx, run, BEFORE)

    @pytest.mark.long_run
    def test_a_turn_ended_in_prose_is_nudged_in_its_session_and_reports(
        self, stack, model_endpoint
    ):
        """Issue 53: the model ends its first turn without finish; the same CLI session gets
        the report nudge, the model reports, and the run succeeds with its one comment."""
        ctx = self.provider.real_agent(stack, model_endpoint, unreported_steps(self.provider.tool))
        stack.assign(ctx)
        assert_nudged_once(stack, ctx, model_endpoint)

    @pytest.mark.long_run
    def test_with_the_nudges_at_0_a_turn_ended_in_prose_fails_the_run(self, stack, model_endpoint):
        stack.extra_env.update(NO_NUDGES)
        ctx = self.provider.real_agent(stack, model_endpoint, unreported_steps(self.provider.tool))
        stack.assign(ctx)
        assert_failed_unnudged(stack, ctx, model_endpoint)
