"""The fake Pi agrees with the real Pi on what the driver and the engine read.

One scenario (a tool that answers, a tool that fails, a closing message) runs
through the real driver against the fake (always) and the pinned CLI with the
scripted model; both reduce to the same recording in ``data/``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("paperclip_pi", reason="the pi plugin is not installed")

from paperclip_hookspecs.providers import DriverContext, McpEndpoint, ProviderEvent, TurnInput
from paperclip_pi.driver import PiDriver

from tests.providers.conformance import WAIT, check_recording, recorded, tool_server
from tests.providers.pi.cli import PI
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import FunctionCall, calls, say

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

RECORDING = Path(__file__).with_name("data") / f"pi-{PI.version}.json"
FAKE_SCRIPT = [
    {"call_tool": {"name": "lookup", "arguments": {"key": "a"}}},
    {"call_tool": {"name": "broken", "arguments": {}}},
    {"message": "done"},
]
MODEL_SCRIPT = [
    calls(FunctionCall("paperclip_lookup", {"key": "a"})),
    calls(FunctionCall("paperclip_broken", {})),
    say("done"),
]


async def run_scenario(
    command: tuple[str, ...], url: str, tmp: Path, config: dict[str, Any]
) -> tuple[Any, list[ProviderEvent]]:
    events: list[ProviderEvent] = []

    async def emit(event: ProviderEvent) -> None:
        events.append(event)

    root = Path(sys.modules["paperclip_pi"].__file__ or "").parent.parent
    env = {"PYTHONPATH": str(root), "SCRIPTED_MODEL_API_KEY": "dummy", "HOME": str(tmp), **PI.env()}
    driver = PiDriver(DriverContext(state_dir=str(tmp / "state"), env=env, command=command))
    turn = TurnInput(
        run_id="conformance",
        prompt="Run the conformance scenario.",
        cwd=str(tmp),
        mcp=McpEndpoint("paperclip", url, "unused"),
        config=config,
        system="Standing rules.",
    )
    try:
        result = await asyncio.wait_for(driver.run_turn(turn, emit), WAIT)
    finally:
        await driver.close()
    return result, events


READ_KINDS = {
    "agent_start",
    "turn_start",
    "message_start",
    "message_end",
    "tool_execution_start",
    "tool_execution_end",
    "turn_end",
    "agent_end",
}
"""What the driver and the engine read; streaming updates and tool progress are left out."""


def reduce(result: Any, events: list[ProviderEvent]) -> dict[str, Any]:
    """The turn as read: each event kind in order, with roles, tools and their errors."""
    sequence: list[list[Any]] = []
    for event in events:
        if event.type not in READ_KINDS:
            continue
        entry: list[Any] = [event.type]
        message = event.payload.get("message")
        if event.type.startswith("message_") and isinstance(message, dict):
            entry.append(message.get("role"))
            if event.type == "message_end" and message.get("role") == "assistant":
                entry.append(message.get("stopReason"))
        if event.type.startswith("tool_execution_"):
            entry.append(event.payload["toolName"])
        if event.type == "tool_execution_end":
            entry.append(event.payload["isError"])
        sequence.append(entry)
    return {"result": [result.status, result.answer], "sequence": sequence}


async def test_the_fake_behaves_like_the_recorded_real_cli(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "conformance.json").write_text(__import__("json").dumps(FAKE_SCRIPT))
    command = (sys.executable, "-m", "paperclip_pi.fake_pi", "--script-dir", str(scripts))
    config = {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "conformance",
        "env_key": "SCRIPTED_MODEL_API_KEY",
    }
    async with tool_server() as url:
        result, events = await run_scenario(command, url, tmp_path, config)
    assert reduce(result, events) == recorded(RECORDING)


@pytest.mark.pi_cli
async def test_the_real_cli_behaves_as_recorded(tmp_path: Path) -> None:
    cli = PI.require()
    with ModelEndpoint() as endpoint:
        endpoint.script("conformance", MODEL_SCRIPT)
        config = {
            "base_url": endpoint.url,
            "model": "conformance",
            "env_key": "SCRIPTED_MODEL_API_KEY",
        }
        async with tool_server() as url:
            result, events = await run_scenario((str(cli),), url, tmp_path, config)
    check_recording(RECORDING, reduce(result, events), "PAPERCLIP_RECORD_PI")
