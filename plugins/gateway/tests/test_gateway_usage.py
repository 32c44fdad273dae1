"""Each gateway run's usage, from its final answer as the fake gateway sends it, reported once."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeGateway
from paperclip_gateway.driver import GatewayDriver
from paperclip_gateway.usage import UsageReports, run_usage
from paperclip_hookspecs.providers import DriverContext, McpEndpoint, TurnInput
from paperclip_provider_kit.testing import TOKEN, WAIT, Events, ToolServer

TurnUsage = pytest.importorskip("paperclip_hookspecs.usage", reason="hook API < 1.8").TurnUsage

pytestmark = pytest.mark.process

COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")
FINISH = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}}


class Reported(list[Any]):
    """``DriverContext.report_usage``: keeps what the driver reported."""

    async def __call__(self, usage: Any) -> None:
        self.append(usage)


def counts(usage: Any) -> dict[str, int]:
    return {key: getattr(usage, key) for key in COUNTS}


def sent(gateway: FakeGateway, run_id: str) -> dict[str, Any]:
    """What the fake's model calls of one gateway run used, summed (its log)."""
    calls = [e for e in gateway.log() if e["type"] == "usage" and e["runId"] == run_id]
    return {key: sum(c[key] for c in calls) for key in (*COUNTS, "cost")}


def new_driver(state_dir: Path, gateway: FakeGateway, reported: Reported) -> GatewayDriver:
    context = DriverContext(state_dir=str(state_dir), command=gateway.profile())
    return GatewayDriver(dataclasses.replace(context, report_usage=reported))


def turn(tool_server: ToolServer | None) -> TurnInput:
    return TurnInput(
        run_id="run-1",
        prompt="Fix the build",
        cwd="/tmp",
        mcp=McpEndpoint("paperclip", tool_server.url, TOKEN) if tool_server else None,
        config={"agent_id": "coder"},
        issue_id="issue-7",
    )


async def test_a_run_reports_the_usage_its_final_answer_carries_once(
    gateway: FakeGateway, tool_server: ToolServer, state_dir: Path
) -> None:
    priced = {"input_tokens": 5000, "cached_input_tokens": 1000, "output_tokens": 80, "cost": 0.03}
    gateway.script("coder", [{**FINISH, "usage": priced}, {"message": "Done."}])
    reported, events = Reported(), Events()
    driver = new_driver(state_dir, gateway, reported)
    try:
        result = await asyncio.wait_for(driver.run_turn(turn(tool_server), events), WAIT)
        # Asked again (a restarted controller), the same run answers: not reported again.
        again = await asyncio.wait_for(driver.run_turn(turn(tool_server), Events()), WAIT)
    finally:
        await driver.close()
    assert (result.status, again.status) == ("completed", "completed"), result.error

    (usage,) = reported
    expected = sent(gateway, "run-1")
    assert (usage.key, usage.model) == ("run-1", "coder")
    assert counts(usage) == {key: expected[key] for key in COUNTS}
    assert usage.cost_micros == round(expected["cost"] * 1_000_000) == 30_000
    # The gateway's events carry the run's output tokens so far, after each model call.
    outputs = [e.payload["data"]["outputTokens"] for e in events.items if e.type == "agent.usage"]
    assert outputs[-1] == usage.output_tokens and outputs == sorted(outputs) and len(outputs) == 2


async def test_a_follow_up_reports_its_own_run_s_usage(
    gateway: FakeGateway, state_dir: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    gateway.script_a_follow_up("coder", go)
    reported, events = Reported(), Events()
    driver = new_driver(state_dir, gateway, reported)
    try:
        run = asyncio.ensure_future(driver.run_turn(turn(None), events))
        await events.wait_for("agent.lifecycle")
        assert await driver.steer("m-1", "Also the changelog.")
        go.write_text("")
        result = await asyncio.wait_for(run, WAIT)
    finally:
        await driver.close()
    assert result.status == "completed" and result.answer == "Follow-up.", result.error
    assert [u.key for u in reported] == ["run-1", "run-1:follow-up:m-1"]
    assert [counts(u) for u in reported] == [
        {key: sent(gateway, run_id)[key] for key in COUNTS} for run_id in [u.key for u in reported]
    ]


async def test_a_run_whose_end_came_through_agent_wait_reports_no_usage(
    gateway: FakeGateway, tool_server: ToolServer, state_dir: Path
) -> None:
    gateway.script("coder", [{"drop_connection": True}, {"sleep": 0.5}, FINISH, {"message": "ok"}])
    reported = Reported()
    driver = new_driver(state_dir, gateway, reported)
    try:
        result = await asyncio.wait_for(driver.run_turn(turn(tool_server), Events()), WAIT)
    finally:
        await driver.close()
    assert result.status == "completed", result.error
    # agent.wait answers with no usage (as OpenClaw's does): the run's is not known.
    assert reported == []


def test_a_final_answer_without_usage_reports_none() -> None:
    assert run_usage({"runId": "r", "status": "ok"}, "r") is None
    final = {
        "runId": "r",
        "result": {
            "meta": {
                "agentMeta": {
                    "model": "m",
                    "usage": {"input": 10, "output": 5, "cacheRead": 3, "cost": {"total": 0}},
                }
            }
        },
    }
    assert run_usage(final, "r") == TurnUsage(
        key="r", model="m", input_tokens=13, cached_input_tokens=3, output_tokens=5
    )


async def test_the_same_run_is_reported_once_by_a_driver() -> None:
    reported = Reported()

    class Context:
        report_usage = reported

    reports = UsageReports(Context())  # type: ignore[arg-type]
    usage = TurnUsage(key="run-1", model="m", input_tokens=10)
    await reports.send(usage)
    await reports.send(usage)
    assert reported == [usage]
