"""Fixtures: a real MCP tool server on loopback, the fake Pi's scripts, a driver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from paperclip_hookspecs.providers import DriverContext
from paperclip_pi.driver import PiDriver
from paperclip_provider_kit.testing import ScriptFolder

# The kit's fixtures: tool_server, events, state_dir.
pytest_plugins = ["paperclip_provider_kit.fixtures"]

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fake(tmp_path: Path) -> ScriptFolder:
    """The fake Pi's files: a script per model, and its log."""
    folder = tmp_path / "fake"
    folder.mkdir()
    return ScriptFolder(folder, "paperclip_pi.fake_pi")


@pytest.fixture
async def driver(state_dir: Path, fake: ScriptFolder) -> AsyncIterator[PiDriver]:
    env = {"PYTHONPATH": str(PLUGIN_ROOT), "SCRIPTED_MODEL_API_KEY": "dummy"}
    pi = PiDriver(DriverContext(state_dir=str(state_dir), env=env, command=fake.command()))
    try:
        yield pi
    finally:
        await pi.close()
