"""Pi reports its session while the turn runs: a runner lost mid-turn resumes the session file."""

from __future__ import annotations

import pytest

from tests.providers.lost_runner import resumed_in_the_same_session
from tests.providers.pi.provider import PI

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def test_a_runner_and_pi_killed_mid_turn_resume_the_same_session(stack):
    resumed_in_the_same_session(stack, PI)
