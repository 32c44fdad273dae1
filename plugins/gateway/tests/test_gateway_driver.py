"""The driver against the fake gateway as a real process, the run's tools through the relay."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from conftest import FakeGateway
from paperclip_gateway.config import GatewaySettings
from paperclip_gateway.driver import GatewayDriver
from paperclip_hookspecs.providers import DriverContext, McpEndpoint, TurnInput
from paperclip_provider_kit.testing import TOKEN, WAIT, Events, ToolServer

pytestmark = pytest.mark.process


def turn(tool_server: ToolServer | None, **extra) -> TurnInput:
    mcp = McpEndpoint("paperclip", tool_server.url, TOKEN) if tool_server else None
    fields = {
        "run_id": "run-1",
        "prompt": "Fix the build",
        "cwd": "/tmp",
        "mcp": mcp,
        "config": {"agent_id": "coder"},
        "system": "Standing rules.",
        "issue_id": "issue-7",
    }
    return TurnInput(**{**fields, **extra})


FINISH = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}}


async def test_a_run_calls_the_tools_through_the_relay_and_ends_with_its_reply(
    driver: GatewayDriver, gateway: FakeGateway, tool_server: ToolServer, events: Events
):
    gateway.script(
        "coder",
        [
            {"call_tool": {"name": "echo", "arguments": {"text": "hi"}}},
            FINISH,
            {"message": "Done."},
        ],
    )
    result = await asyncio.wait_for(driver.run_turn(turn(tool_server), events), WAIT)

    assert result.status == "completed", result.error
    assert result.answer == "Done." and result.session_ref == "paperclip:issue:issue-7"
    assert [c["name"] for c in tool_server.calls] == [
        "echo",
        "finish",
    ] and tool_server.rejected == []
    tools = [
        e.payload["data"]
        for e in events.items
        if e.type == "agent.item" and e.payload["data"]["phase"] == "end"
    ]
    assert [(t["name"], t["status"]) for t in tools] == [
        ("paperclip__echo", "completed"),
        ("paperclip__finish", "completed"),
    ]
    assert events.types()[-1] == "chat.final"
    (run,) = [e for e in gateway.log() if e["type"] == "run"]
    assert run["extraSystemPrompt"] == "Standing rules." and run["runId"] == "run-1"


async def test_the_same_run_asked_again_is_not_run_twice(
    driver: GatewayDriver, gateway: FakeGateway, tool_server: ToolServer, events: Events
):
    gateway.script("coder", [FINISH, {"message": "Done."}])
    first = await asyncio.wait_for(driver.run_turn(turn(tool_server), events), WAIT)
    again = await asyncio.wait_for(driver.run_turn(turn(tool_server), events), WAIT)
    assert (first.status, again.status) == ("completed", "completed")
    assert again.answer == "Done."
    assert [c["name"] for c in tool_server.calls] == ["finish"]
    assert len([e for e in gateway.log() if e["type"] == "run"]) == 1


async def test_a_connection_lost_mid_run_is_reconnected_to_the_same_run(
    driver: GatewayDriver, gateway: FakeGateway, tool_server: ToolServer, events: Events
):
    gateway.script(
        "coder", [{"drop_connection": True}, {"sleep": 0.5}, FINISH, {"message": "Done."}]
    )
    result = await asyncio.wait_for(driver.run_turn(turn(tool_server), events), WAIT)
    assert result.status == "completed" and result.answer == "Done."
    assert [c["name"] for c in tool_server.calls] == ["finish"]
    assert len([e for e in gateway.log() if e["type"] == "run"]) == 1
    agents = [
        e["frame"]
        for e in gateway.log()
        if e["type"] == "received" and e["frame"]["method"] == "agent"
    ]
    assert len(agents) == 2 and {a["params"]["idempotencyKey"] for a in agents} == {"run-1"}


async def test_a_follow_up_runs_after_the_turn_on_the_same_session(
    driver: GatewayDriver, gateway: FakeGateway, events: Events, tmp_path
):
    go = tmp_path / "go"
    gateway.script_a_follow_up("coder", go)
    run = asyncio.ensure_future(driver.run_turn(turn(None), events))
    await events.wait_for("agent.lifecycle")
    assert await driver.steer("m-1", "Also the changelog.")
    go.write_text("")
    result = await asyncio.wait_for(run, WAIT)
    assert result.status == "completed" and result.answer == "Follow-up.", result.error
    runs = [e for e in gateway.log() if e["type"] == "run"]
    assert [r["runId"] for r in runs] == ["run-1", "run-1:follow-up:m-1"]
    assert {r["sessionKey"] for r in runs} == {"agent:main:paperclip:issue:issue-7"}


async def test_an_interrupt_ends_the_turn_interrupted(
    driver, gateway: FakeGateway, events: Events, tmp_path
):
    gateway.script("coder", [{"wait_for_file": str(tmp_path / "never"), "timeout": 60}])
    run = asyncio.ensure_future(driver.run_turn(turn(None), events))
    await events.wait_for("agent.lifecycle")
    await driver.interrupt()
    result = await asyncio.wait_for(run, WAIT)
    assert result.status == "interrupted"


async def test_a_wrong_token_is_refused_and_named(
    tmp_path, gateway: FakeGateway, events: Events, monkeypatch
):
    from paperclip_hookspecs.providers import DriverContext

    monkeypatch.setenv("TEST_GATEWAY_TOKEN", "not-it")
    driver = GatewayDriver(DriverContext(state_dir=str(tmp_path), command=gateway.profile()))
    try:
        result = await asyncio.wait_for(driver.run_turn(turn(None), events), WAIT)
    finally:
        await driver.close()
    assert result.status == "failed" and result.error.startswith("connect_failed")
    assert "token mismatch" in result.error


async def test_a_config_naming_a_gateway_or_a_secret_is_refused(driver, events: Events):
    for config in ({"url": "ws://evil:1"}, {"token": "x"}, {"session_key_strategy": "fixed"}):
        result = await driver.run_turn(turn(None, config=config), events)
        assert result.status == "failed" and result.error.startswith("invalid_config"), config


async def test_a_turn_past_its_timeout_is_aborted_on_the_gateway_and_fails(
    driver: GatewayDriver, gateway: FakeGateway, events: Events, tmp_path
):
    gateway.script("coder", [{"wait_for_file": str(tmp_path / "never"), "timeout": 60}])
    config = {"agent_id": "coder", "turn_timeout_seconds": 1}
    result = await asyncio.wait_for(driver.run_turn(turn(None, config=config), events), WAIT)
    assert result.status == "failed" and result.error.startswith("turn_timeout"), result.error
    aborts = [
        e["frame"]["params"]
        for e in gateway.log()
        if e["type"] == "received" and e["frame"]["method"] == "sessions.abort"
    ]
    assert aborts == [{"key": "paperclip:issue:issue-7", "runId": "run-1"}]


def test_a_turn_has_a_timeout_unless_the_agent_sets_its_own():
    assert GatewaySettings.from_config({}).turn_timeout_seconds == 3600
    assert GatewaySettings.from_config({"turn_timeout_seconds": None}).turn_timeout_seconds == 3600
    assert GatewaySettings.from_config({"turn_timeout_seconds": 90}).turn_timeout_seconds == 90


async def test_a_new_driver_asks_the_gateway_for_the_end_of_a_run_it_already_has(
    gateway: FakeGateway, state_dir, tool_server: ToolServer, events: Events, tmp_path
):
    """A runner lost mid-run: the next one's driver sends the same key and is answered
    ``in_flight`` once, as OpenClaw does; it learns the run's end with ``agent.wait``."""
    go = tmp_path / "go"
    gateway.script(
        "coder", [{"wait_for_file": str(go), "timeout": 30}, FINISH, {"message": "Done."}]
    )
    lost = GatewayDriver(DriverContext(state_dir=str(state_dir), command=gateway.profile()))
    run = asyncio.ensure_future(lost.run_turn(turn(tool_server), events))
    await events.wait_for("agent.lifecycle")
    run.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await run
    await lost.close()

    again = GatewayDriver(DriverContext(state_dir=str(state_dir), command=gateway.profile()))
    try:
        second = asyncio.ensure_future(again.run_turn(turn(tool_server), events))
        await _received(gateway, "agent.wait")
        go.write_text("")
        result = await asyncio.wait_for(second, WAIT)
    finally:
        await again.close()
    assert result.status == "completed" and result.answer == "Done.", result.error
    assert [c["name"] for c in tool_server.calls] == ["finish"]
    assert len([e for e in gateway.log() if e["type"] == "run"]) == 1


async def test_a_request_whose_session_was_taken_as_it_started_goes_again_under_its_own_key(
    driver: GatewayDriver, gateway: FakeGateway, tool_server: ToolServer, events: Events
):
    """After a restart OpenClaw resumes the session by itself; a continuation that races it is
    refused (``SESSION_WORK_START_CHANGED``, the refusal kept for its key). Nothing of it ran:
    it is sent again, keyed apart, and runs once."""
    gateway.script("coder", {"turns": [[{"session_taken": True}], [FINISH, {"message": "Done."}]]})
    go_on = turn(tool_server, session_ref="paperclip:issue:issue-7", prompt="Go on.")
    result = await asyncio.wait_for(driver.run_turn(go_on, events), WAIT)

    assert result.status == "completed" and result.answer == "Done.", result.error
    assert result.session_ref == "paperclip:issue:issue-7"
    assert [c["name"] for c in tool_server.calls] == ["finish"]
    (refused,) = [e["runId"] for e in gateway.log() if e["type"] == "refused"]
    (ran,) = [e["runId"] for e in gateway.log() if e["type"] == "run"]
    assert refused.startswith("run-1:turn:") and ran == f"{refused}:retry:1"
    assert {e.payload["runId"] for e in events.items if e.type.startswith("agent.")} == {ran}


async def _received(gateway: FakeGateway, method: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT
    while not any(
        e["type"] == "received" and e["frame"]["method"] == method for e in gateway.log()
    ):
        assert asyncio.get_running_loop().time() < deadline, f"no {method} request"
        await asyncio.sleep(0.05)
