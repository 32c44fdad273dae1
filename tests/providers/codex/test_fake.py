"""The shared real-CLI scenarios against the fake app-server, as a launch profile of a real
runner."""

from __future__ import annotations

import pytest

pytest.importorskip("paperclip_codex", reason="the codex plugin is not installed (tox env core)")

from tests.providers.codex.provider import CODEX
from tests.providers.fake_suite import FakeSuite

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


class TestFake(FakeSuite):
    provider = CODEX
