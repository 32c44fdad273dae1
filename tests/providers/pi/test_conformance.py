"""The fake Pi agrees with the real Pi on what the driver and the engine read.

One scenario (a tool that answers, a tool that fails, a closing message) runs
through the real driver against the fake (always) and the pinned CLI with the
scripted model; both reduce to the same recording in ``data/``, which says
where each response's usage comes (an assistant message starts with none and
ends with its own). The usage the driver reports is, response by response,
what the model sent (Pi counts reasoning tokens within the output, not apart):
the scripted endpoint's for the real CLI, the fake's own (its log) for the fake.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
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


COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens")
"""What Pi reports of a response's usage (reasoning tokens are within the output)."""


class Reported(list[Any]):
    """``DriverContext.report_usage``: the usage the driver reported, in order."""

    async def __call__(self, usage: Any) -> None:
        self.append(usage)

    def counts(self) -> list[dict[str, int]]:
        return [{key: getattr(u, key) for key in COUNTS} for u in self]


async def run_scenario(
    command: tuple[str, ...], url: str, tmp: Path, config: dict[str, Any], reported: Reported
) -> tuple[Any, list[ProviderEvent]]:
    events: list[ProviderEvent] = []

    async def emit(event: ProviderEvent) -> None:
        events.append(event)

    root = Path(sys.modules["paperclip_pi"].__file__ or "").parent.parent
    env = {"PYTHONPATH": str(root), "SCRIPTED_MODEL_API_KEY": "dummy", "HOME": str(tmp), **PI.env()}
    context = DriverContext(state_dir=str(tmp / "state"), env=env, command=command)
    driver = PiDriver(dataclasses.replace(context, report_usage=reported))
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
            if message.get("role") == "assistant":
                entry.append(_usage_shape(message))
        if event.type.startswith("tool_execution_"):
            entry.append(event.payload["toolName"])
        if event.type == "tool_execution_end":
            entry.append(event.payload["isError"])
        sequence.append(entry)
    return {"result": [result.status, result.answer], "sequence": sequence}


def _usage_shape(message: dict[str, Any]) -> dict[str, Any]:
    """Where an assistant message's usage is: its fields, whether it is any, its response id."""
    usage = message["usage"]
    return {
        "fields": sorted(usage),
        "cost": sorted(usage["cost"]),
        "used": bool(usage["input"] or usage["output"]),
        "response_id": isinstance(message.get("responseId"), str),
    }


async def test_the_fake_behaves_like_the_recorded_real_cli(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "conformance.json").write_text(json.dumps(FAKE_SCRIPT))
    log = tmp_path / "fake.log"
    module = "paperclip_pi_testing.fake_pi"
    command = (sys.executable, "-m", module, "--script-dir", str(scripts), "--log", str(log))
    config = {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "conformance",
        "env_key": "SCRIPTED_MODEL_API_KEY",
    }
    reported = Reported()
    async with tool_server() as url:
        result, events = await run_scenario(command, url, tmp_path, config, reported)
    assert reduce(result, events) == recorded(RECORDING)
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    sent = [{k: e[k] for k in COUNTS} for e in entries if e["type"] == "usage"]
    assert reported.counts() == sent and len(sent) == len(FAKE_SCRIPT)


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
        reported = Reported()
        async with tool_server() as url:
            result, events = await run_scenario((str(cli),), url, tmp_path, config, reported)
        sent = endpoint.usage_sent("conformance")
    check_recording(RECORDING, reduce(result, events), "PAPERCLIP_RECORD_PI")
    # Every response's usage reported once, as the model sent it; Pi knows no price for it.
    assert reported.counts() == [{k: getattr(u, k) for k in COUNTS} for u in sent]
    assert len(sent) == len(MODEL_SCRIPT)
    assert {(u.model, u.cost_micros, u.reasoning_tokens) for u in reported} == {
        ("conformance", None, 0)
    }
