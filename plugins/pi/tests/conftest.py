"""Fixtures: a real MCP tool server on loopback, the fake Pi's scripts, drivers on it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from paperclip_pi.driver import PiDriver
from paperclip_provider_kit.testing import FakeDrivers, ScriptFolder, script_folder

# The kit's fixtures: tool_server, events, state_dir.
pytest_plugins = ["paperclip_provider_kit.fixtures"]

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fake(tmp_path: Path) -> ScriptFolder:
    """The fake Pi's files: a script per model, and its log."""
    return script_folder(tmp_path, "paperclip_pi_testing.fake_pi")


@pytest.fixture
def drivers(state_dir: Path, fake: ScriptFolder) -> FakeDrivers:
    """Drivers on the fake, one a run or one a turn."""
    return FakeDrivers(PiDriver, state_dir, fake, PLUGIN_ROOT)


@pytest.fixture
async def driver(drivers: FakeDrivers) -> AsyncIterator[PiDriver]:
    async with drivers.driver() as driver:
        assert isinstance(driver, PiDriver)
        yield driver
