"""The fake server agrees with the real OpenCode on what the driver and the engine read.

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

pytest.importorskip("paperclip_opencode", reason="the opencode plugin is not installed")

from paperclip_hookspecs.providers import DriverContext, McpEndpoint, ProviderEvent, TurnInput
from paperclip_opencode.driver import OpenCodeDriver

from tests.providers.conformance import WAIT, check_recording, recorded, tool_server
from tests.providers.opencode.cli import OPENCODE
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import FunctionCall, calls, say

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

RECORDING = Path(__file__).with_name("data") / f"opencode-{OPENCODE.version}.json"
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

    root = Path(sys.modules["paperclip_opencode"].__file__ or "").parent.parent
    env = {
        "PYTHONPATH": str(root),
        "SCRIPTED_MODEL_API_KEY": "dummy",
        "HOME": str(tmp),
        **OPENCODE.env(),
    }
    driver = OpenCodeDriver(DriverContext(state_dir=str(tmp / "state"), env=env, command=command))
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


def reduce(result: Any, events: list[ProviderEvent]) -> dict[str, Any]:
    """What is read of a turn: the tools' final states, the messages, the end, the answer."""
    tools: dict[str, tuple[str, str]] = {}
    assistants: dict[str, str | None] = {}
    users: set[str] = set()
    for event in events:
        if event.type == "message.part.updated":
            part = event.payload["part"]
            if part["type"] == "tool" and part["state"]["status"] in ("completed", "error"):
                tools.setdefault(part["callID"], (part["tool"], part["state"]["status"]))
        elif event.type == "message.updated":
            info = event.payload["info"]
            if info["role"] == "user":
                users.add(info["id"])
            elif "completed" in info.get("time", {}):
                assistants[info["id"]] = info.get("finish")
    statuses = [e.payload["status"]["type"] for e in events if e.type == "session.status"]
    return {
        "result": [result.status, result.answer],
        "tools": [list(t) for t in tools.values()],
        "finishes": list(assistants.values()),
        "users": len(users),
        "last_status": statuses[-1] if statuses else None,
        "busy_first": statuses[:1] == ["busy"],
    }


async def test_the_fake_behaves_like_the_recorded_real_cli(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "conformance.json").write_text(__import__("json").dumps(FAKE_SCRIPT))
    command = (sys.executable, "-m", "paperclip_opencode.fake_server", "--script-dir", str(scripts))
    config = {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "conformance",
        "env_key": "SCRIPTED_MODEL_API_KEY",
    }
    async with tool_server() as url:
        result, events = await run_scenario(command, url, tmp_path, config)
    assert reduce(result, events) == recorded(RECORDING)


@pytest.mark.opencode_cli
async def test_the_real_cli_behaves_as_recorded(tmp_path: Path) -> None:
    cli = OPENCODE.require()
    with ModelEndpoint() as endpoint:
        endpoint.script("conformance", MODEL_SCRIPT)
        config = {
            "base_url": endpoint.url,
            "model": "conformance",
            "env_key": "SCRIPTED_MODEL_API_KEY",
        }
        async with tool_server() as url:
            result, events = await run_scenario((str(cli), "serve"), url, tmp_path, config)
    check_recording(RECORDING, reduce(result, events), "PAPERCLIP_RECORD_OPENCODE")
