"""The fake gateway agrees with a real OpenClaw gateway on what the driver and the engine read.

One scenario (a tool that answers, a tool that fails, a closing reply) runs
through the real driver and the runner's tool relay against the fake
(always) and a pinned OpenClaw gateway with the scripted model; both reduce to
the same recording in ``data/``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("paperclip_gateway", reason="the gateway plugin is not installed")

from paperclip_gateway.driver import GatewayDriver
from paperclip_hookspecs.providers import DriverContext, McpEndpoint, ProviderEvent, TurnInput

from tests.providers.conformance import WAIT, check_recording, recorded, tool_server
from tests.providers.gateway.cli import OPENCLAW
from tests.providers.gateway.conftest import Gateway, start_fake_gateway, start_openclaw
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import FunctionCall, calls, say

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

RECORDING = Path(__file__).with_name("data") / f"openclaw-{OPENCLAW.version}.json"
FAKE_SCRIPT = [
    {"call_tool": {"name": "lookup", "arguments": {"key": "a"}}},
    {"call_tool": {"name": "broken", "arguments": {}}},
    {"message": "done"},
]
MODEL_SCRIPT = [
    calls(FunctionCall("paperclip__lookup", {"key": "a"})),
    calls(FunctionCall("paperclip__broken", {})),
    say("done"),
]


async def run_scenario(
    gateway: Gateway, url: str, tmp: Path, config: dict[str, Any]
) -> tuple[Any, list[ProviderEvent]]:
    events: list[ProviderEvent] = []

    async def emit(event: ProviderEvent) -> None:
        events.append(event)

    os.environ.update(gateway.runner_env())
    driver = GatewayDriver(DriverContext(state_dir=str(tmp), command=tuple(gateway.profile())))
    turn = TurnInput(
        run_id="conformance-run",
        prompt="Run the conformance scenario.",
        cwd=str(tmp),
        mcp=McpEndpoint("paperclip", url, "unused"),
        config=config,
        system="Standing rules.",
        issue_id="issue-1",
    )
    try:
        result = await asyncio.wait_for(driver.run_turn(turn, emit), WAIT)
    finally:
        await driver.close()
    return result, events


def reduce(result: Any, events: list[ProviderEvent]) -> dict[str, Any]:
    """The run as read: its tools' ends, its life's first and last phase, its final reply."""
    tools = [
        [e.payload["data"]["name"], e.payload["data"]["status"]]
        for e in events
        if e.type == "agent.item"
        and e.payload["data"].get("kind") == "tool"
        and e.payload["data"]["phase"] == "end"
    ]
    phases = [e.payload["data"]["phase"] for e in events if e.type == "agent.lifecycle"]
    end = next(e.payload["data"] for e in reversed(events) if e.type == "agent.lifecycle")
    finals = [e.payload for e in events if e.type == "chat.final"]
    return {
        "result": [result.status, result.answer],
        "tools": tools,
        "phases": [phases[0], phases[-1]],
        "aborted": end.get("aborted"),
        "streams": sorted({e.type for e in events}),
        "final_reply_ends_with_answer": bool(finals)
        and str(finals[-1]["message"]["content"][-1]["text"]).endswith(str(result.answer)),
        "run_ids": sorted({e.payload["runId"] for e in events}),
    }


async def test_the_fake_behaves_like_the_recorded_real_gateway(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "conformance.json").write_text(json.dumps(FAKE_SCRIPT))
    gateway = start_fake_gateway(tmp_path, scripts)
    try:
        async with tool_server() as url:
            result, events = await run_scenario(gateway, url, tmp_path, {"agent_id": "conformance"})
    finally:
        gateway.stop()
    assert reduce(result, events) == recorded(RECORDING)


@pytest.mark.gateway_cli
async def test_the_real_gateway_behaves_as_recorded(tmp_path: Path) -> None:
    with ModelEndpoint() as endpoint:
        endpoint.script("conformance", MODEL_SCRIPT)
        gateway = start_openclaw(tmp_path, endpoint, "conformance")
        try:
            async with tool_server() as url:
                result, events = await run_scenario(gateway, url, tmp_path, {})
        finally:
            gateway.stop()
    check_recording(RECORDING, reduce(result, events), "PAPERCLIP_RECORD_OPENCLAW")
