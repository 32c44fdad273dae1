"""The real-CLI scenarios against a provider's fake, as a launch profile of a real runner.

A provider's ``test_fake.py`` runs them by naming its description::

    class TestFake(FakeSuite):
        provider = OPENCODE

Each scenario starts a control plane and a runner offering the fake (the
``stack`` fixture of tests/providers/conftest.py, which a provider's conftest
may override), scripts the fake, and checks what the real-CLI suite checks.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tests.providers.description import ProviderUnderTest
from tests.providers.scenarios import (
    GUARD_FAKE_SCRIPT,
    TOOLS_THEN_FINISH,
    WAIT,
    assert_succeeded_once,
    fake_gate,
    restart_script,
    run_fake_restart,
    run_fake_scenarios_tools,
    run_guard_correction,
    steer_and_wait,
    wait_reached,
)

STEERED = "Also the changelog."


def message_during_a_slow_step(reached, go, steers: bool) -> Any:
    """A slow step (the gate) after the task is read; what the message asks for next. A CLI
    that steers reads it before its next step; one that follows up answers it after its
    prompt, as a prompt of its own."""
    first = [
        {"call_tool": {"name": "get_task_context", "arguments": {}}},
        {"touch_file": str(reached)},
        {"wait_for_file": str(go), "timeout": 120},
    ]
    then = [
        {"call_tool": {"name": "post_comment", "arguments": {"body": "Changelog mentioned."}}},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
        {"message": "Done."},
    ]
    if steers:
        return first + then
    return {"turns": [[*first, {"message": "Reading the task."}], then]}


class FakeSuite:
    """The scenarios every provider runs against its fake."""

    provider: ClassVar[ProviderUnderTest]

    def test_a_run_calls_our_tools_and_succeeds(self, stack):
        ctx = self.provider.fake_agent(stack, TOOLS_THEN_FINISH)
        run = run_fake_scenarios_tools(stack, ctx)
        assert len(self.provider.prompts(stack, ctx, run)) == 1

    def test_a_message_during_a_slow_step_is_answered_in_the_same_turn(self, stack):
        reached, go = fake_gate(stack)
        script = message_during_a_slow_step(reached, go, self.provider.steers)
        ctx = self.provider.fake_agent(stack, script)
        stack.assign(ctx)
        wait_reached(reached)
        (run,) = stack.runs(ctx)
        answer = steer_and_wait(stack, ctx, run["id"], "steer-1", STEERED)
        assert answer == "steering_acknowledgement"
        go.write_text("")
        run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
        assert_succeeded_once(stack, ctx, run, "Changelog mentioned.")
        # One turn: the prompt, and the message within it or after it.
        prompts = self.provider.prompts(stack, ctx, run)
        assert len(prompts) == (1 if self.provider.steers else 2), prompts
        self.provider.check_steered(stack, ctx, run, STEERED)

    def test_sigkill_of_the_control_plane_during_a_slow_step_has_no_duplicate_effect(self, stack):
        reached, go = fake_gate(stack)
        ctx = self.provider.fake_agent(stack, restart_script(reached, go))
        run_fake_restart(stack, ctx, reached, go)

    def test_a_refused_finish_is_corrected_in_the_same_turn(self, stack):
        ctx = self.provider.fake_agent(stack, GUARD_FAKE_SCRIPT)
        run = run_guard_correction(stack, ctx)
        assert len(self.provider.prompts(stack, ctx, run)) == 1  # the correction within it
