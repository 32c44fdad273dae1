"""The real OpenCode CLI (pinned, from npm) driven by Paperclip, the model a scripted endpoint.

The scenarios are tests/providers/real_cli_suite.py's; what OpenCode does its own
way is in its description, tests/providers/opencode/provider.py.
"""

from __future__ import annotations

import pytest

from tests.providers.opencode.provider import OPENCODE
from tests.providers.real_cli_suite import RealCliSuite

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.opencode_cli]


class TestRealCli(RealCliSuite):
    provider = OPENCODE
