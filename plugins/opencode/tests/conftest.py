"""Fixtures: a real MCP tool server on loopback, the fake server's scripts, a driver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from paperclip_hookspecs.providers import DriverContext
from paperclip_opencode.driver import OpenCodeDriver
from paperclip_provider_kit.testing import ScriptFolder

# The kit's fixtures: tool_server, events, state_dir.
pytest_plugins = ["paperclip_provider_kit.fixtures"]

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fake(tmp_path: Path) -> ScriptFolder:
    """The fake server's files: a script per model, and its log."""
    folder = tmp_path / "fake"
    folder.mkdir()
    return ScriptFolder(folder, "paperclip_opencode.fake_server")


@pytest.fixture
async def driver(state_dir: Path, fake: ScriptFolder) -> AsyncIterator[OpenCodeDriver]:
    env = {"PYTHONPATH": str(PLUGIN_ROOT), "SCRIPTED_MODEL_API_KEY": "dummy"}
    opencode = OpenCodeDriver(
        DriverContext(state_dir=str(state_dir), env=env, command=fake.command())
    )
    try:
        yield opencode
    finally:
        await opencode.close()
