"""The real-CLI scenarios against the fake OpenCode, as a launch profile of a real runner."""

from __future__ import annotations

import pytest

from tests.providers.fake_suite import FakeSuite
from tests.providers.opencode.provider import OPENCODE

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


class TestFake(FakeSuite):
    provider = OPENCODE
