"""The turns every provider's driver is tried with against its fake, and what they share.

Each runs one turn through a driver on the fake (the plugin's ``driver``
fixture) and checks what every provider's driver must do; the provider's test
then checks what its CLI's events say of it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from paperclip_hookspecs.providers import ProviderDriver, TurnResult

from paperclip_provider_kit.testing import (
    WAIT,
    Events,
    ScriptFolder,
    ToolServer,
    run_turn,
    scripted_turn,
)

TOOLS_THEN_ANSWER = [
    {"call_tool": {"name": "echo", "arguments": {"text": "hi"}}},
    {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
    {"message": "All done."},
]


async def tools_then_answer(
    driver: ProviderDriver, fake: ScriptFolder, tools: ToolServer, events: Events, cwd: Path
) -> TurnResult:
    """A turn that calls the run's tools (with the run's token) and ends with its answer."""
    fake.script("m1", TOOLS_THEN_ANSWER)
    result = await run_turn(driver, scripted_turn(cwd, tools), events)
    assert result.status == "completed", result.error
    assert result.answer == "All done." and result.session_ref
    assert [c["name"] for c in tools.calls] == ["echo", "finish"]
    assert tools.rejected == []
    return result


async def interrupted(
    driver: ProviderDriver, fake: ScriptFolder, events: Events, cwd: Path, started: str
) -> TurnResult:
    """A turn interrupted once its event ``started`` has come: it ends ``interrupted``."""
    fake.script("m1", [{"wait_for_file": str(cwd / "never"), "timeout": 60}, {"message": "late"}])
    run = asyncio.ensure_future(driver.run_turn(scripted_turn(cwd, None), events))
    await events.wait_for(started)
    await driver.interrupt()
    result = await asyncio.wait_for(run, WAIT)
    assert result.status == "interrupted"
    return result


async def started_without_the_runners_variables(
    driver: ProviderDriver, fake: ScriptFolder, events: Events, cwd: Path, monkeypatch: Any
) -> dict[str, Any]:
    """A turn with a runner's own secret in the environment: the fake's ``started`` entry
    (what the CLI was started with), which names no variable of the runner's."""
    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setenv("PAPERCLIP_RUNNER_CREDENTIAL", "secret")
    fake.script("m1", [{"message": "ok"}])
    result = await run_turn(driver, scripted_turn(cwd, None), events)
    assert result.status == "completed"
    (started,) = [e for e in fake.log() if e["type"] == "started"]
    assert "PAPERCLIP_RUNNER_CREDENTIAL" not in started["env"]
    return started
