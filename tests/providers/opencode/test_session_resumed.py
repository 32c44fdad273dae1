"""OpenCode reports its session while the turn runs: a runner lost mid-turn resumes it."""

from __future__ import annotations

import pytest

from tests.providers.lost_runner import resumed_in_the_same_session
from tests.providers.opencode.provider import OPENCODE

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def test_a_runner_and_opencode_killed_mid_turn_resume_the_same_session(stack):
    resumed_in_the_same_session(stack, OPENCODE)
