"""The real Pi CLI (pinned, from npm) driven by Paperclip, the model a scripted endpoint.

The scenarios are tests/providers/real_cli_suite.py's; what Pi does its own
way is in its description, tests/providers/pi/provider.py.
"""

from __future__ import annotations

import pytest

from tests.providers.pi.provider import PI
from tests.providers.real_cli_suite import RealCliSuite

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.pi_cli]


class TestRealCli(RealCliSuite):
    provider = PI
