"""OpenCode reports its session while the turn runs: a runner lost mid-turn resumes it."""

from __future__ import annotations

import pytest

from tests.providers.lost_runner import (
    assert_resumed_in_the_same_session,
    fake_agent_for,
    lost_turn_script,
)
from tests.providers.opencode.conftest import FAKE

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def test_a_runner_and_opencode_killed_mid_turn_resume_the_same_session(opencode_stack):
    stack = opencode_stack
    stack.start_server()
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    argv = [*FAKE, "--script-dir", str(stack.script_dir), "--log", str(stack.fake_log)]
    launch = {"opencode": {"fake": argv}}
    stack.start_runner(launch=launch)
    ctx = fake_agent_for(stack, "opencode", lost_turn_script(stack.tmp / "reached"))
    assert_resumed_in_the_same_session(stack, ctx, "paperclip_opencode_testing.fake_server", launch)
