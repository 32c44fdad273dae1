"""The fake gateway agrees with a real OpenClaw gateway on what the driver and the engine read.

One scenario (a tool that answers, a tool that fails, a closing reply) runs
through the real driver and the runner's tool relay against the fake
(always) and a pinned OpenClaw gateway with the scripted model; both reduce to
the same recording in ``data/``, which says where usage shows: the ``usage``
events (the run's output tokens so far, after each model call) and the one
usage the driver reports, from the run's final answer. That usage is the sum
of what the model sent: the scripted endpoint's for the real gateway, the
fake's own (its log) for the fake.
"""

from __future__ import annotations

import asyncio
import dataclasses
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


COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")


class Reported(list[Any]):
    """``DriverContext.report_usage``: the usage the driver reported, in order."""

    async def __call__(self, usage: Any) -> None:
        self.append(usage)


def summed(usages: list[dict[str, int]]) -> dict[str, int]:
    return {key: sum(u[key] for u in usages) for key in COUNTS}


async def run_scenario(
    gateway: Gateway, url: str, tmp: Path, config: dict[str, Any], reported: Reported
) -> tuple[Any, list[ProviderEvent]]:
    events: list[ProviderEvent] = []

    async def emit(event: ProviderEvent) -> None:
        events.append(event)

    os.environ.update(gateway.runner_env())
    context = DriverContext(state_dir=str(tmp), command=tuple(gateway.profile()))
    driver = GatewayDriver(dataclasses.replace(context, report_usage=reported))
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


def reduce(result: Any, events: list[ProviderEvent], reported: Reported) -> dict[str, Any]:
    """The run as read: its tools' ends, its life's first and last phase, its final reply,
    where its usage shows."""
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
        "usage_events": _usage_events(events),
        "reported": [[u.key, u.model, u.cost_micros] for u in reported],
    }


def _usage_events(events: list[ProviderEvent]) -> list[list[Any]]:
    """Each ``usage`` event: its fields, what came just before it, whether the count grew."""
    shown, before, outputs = [], "", [0]
    for event in events:
        data = event.payload.get("data") or {}
        if event.type == "agent.usage":
            grew = data["outputTokens"] > outputs[-1]
            outputs.append(data["outputTokens"])
            shown.append([sorted(data), before, grew])
        before = event.type + (f":{data['phase']}" if event.type == "agent.lifecycle" else "")
    return shown


async def test_the_fake_behaves_like_the_recorded_real_gateway(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "conformance.json").write_text(json.dumps(FAKE_SCRIPT))
    gateway = start_fake_gateway(tmp_path, scripts)
    reported = Reported()
    try:
        async with tool_server() as url:
            config = {"agent_id": "conformance"}
            result, events = await run_scenario(gateway, url, tmp_path, config, reported)
    finally:
        gateway.stop()
    assert reduce(result, events, reported) == recorded(RECORDING)
    assert gateway.log_path is not None
    entries = [json.loads(line) for line in gateway.log_path.read_text().splitlines()]
    sent = [e for e in entries if e.get("type") == "usage"]
    assert [{k: getattr(u, k) for k in COUNTS} for u in reported] == [summed(sent)]


@pytest.mark.gateway_cli
async def test_the_real_gateway_behaves_as_recorded(tmp_path: Path) -> None:
    with ModelEndpoint() as endpoint:
        endpoint.script("conformance", MODEL_SCRIPT)
        gateway = start_openclaw(tmp_path, endpoint, "conformance")
        reported = Reported()
        try:
            async with tool_server() as url:
                result, events = await run_scenario(gateway, url, tmp_path, {}, reported)
        finally:
            gateway.stop()
        sent = [u.as_dict() for u in endpoint.usage_sent("conformance")]
    check_recording(RECORDING, reduce(result, events, reported), "PAPERCLIP_RECORD_OPENCLAW")
    # The run's usage, reported once: the sum of what the model sent for its three calls.
    assert len(sent) == len(MODEL_SCRIPT)
    assert [{k: getattr(u, k) for k in COUNTS} for u in reported] == [summed(sent)]
