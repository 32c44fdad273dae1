"""Fixtures: a real MCP tool server on loopback, the fake server's scripts, a driver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from paperclip_opencode.driver import OpenCodeDriver
from paperclip_provider_kit.testing import ScriptFolder, driver_on_fake, script_folder

# The kit's fixtures: tool_server, events, state_dir.
pytest_plugins = ["paperclip_provider_kit.fixtures"]

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fake(tmp_path: Path) -> ScriptFolder:
    """The fake server's files: a script per model, and its log."""
    return script_folder(tmp_path, "paperclip_opencode_testing.fake_server")


@pytest.fixture
async def driver(state_dir: Path, fake: ScriptFolder) -> AsyncIterator[OpenCodeDriver]:
    async with driver_on_fake(OpenCodeDriver, state_dir, fake, PLUGIN_ROOT) as driver:
        yield driver
