"""Pi reports its session while the turn runs: a runner lost mid-turn resumes the session file."""

from __future__ import annotations

import pytest

from tests.providers.lost_runner import (
    assert_resumed_in_the_same_session,
    fake_agent_for,
    lost_turn_script,
)
from tests.providers.pi.conftest import FAKE

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def test_a_runner_and_pi_killed_mid_turn_resume_the_same_session(pi_stack):
    pi_stack.start_server()
    pi_stack.script_dir.mkdir(parents=True, exist_ok=True)
    argv = [*FAKE, "--script-dir", str(pi_stack.script_dir), "--log", str(pi_stack.fake_log)]
    launch = {"pi": {"fake": argv}}
    pi_stack.start_runner(launch=launch)
    ctx = fake_agent_for(pi_stack, "pi", lost_turn_script(pi_stack.tmp / "reached"))
    assert_resumed_in_the_same_session(pi_stack, ctx, "paperclip_pi_testing.fake_pi", launch)
