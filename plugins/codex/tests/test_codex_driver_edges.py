"""The Codex driver at its edges, against the fake app-server: credentials, approvals and
gating, failures and timeouts, closing, and what reaches the Codex process."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path

import pytest
from codex_testing import (
    Events,
    FakeCodex,
    ToolServer,
    bounded,
    driver_context,
    held_turn,
    pid_alive,
    reach,
    turn_events,
    turn_input,
)
from paperclip_codex.config import MCP_TOKEN_ENV_VAR
from paperclip_codex.driver import CodexDriver

pytestmark = pytest.mark.process


@pytest.mark.parametrize(("token", "header"), [("wrong-token", "Bearer wrong-token"), ("", None)])
async def test_bad_or_missing_bearer_token_is_refused_and_surfaces_as_a_failed_tool_call(
    driver: CodexDriver,
    fake: FakeCodex,
    tool_server: ToolServer,
    events: Events,
    tmp_path: Path,
    token: str,
    header: str | None,
) -> None:
    fake.script(
        [
            {"call_tool": {"name": "echo", "arguments": {"text": "secret"}}},
            {"message": "The tool call failed."},
        ]
    )
    turn = turn_input(fake, tmp_path, tools=tool_server, token=token)
    result = await bounded(driver.run_turn(turn, events))

    assert result.status == "completed", result.error  # the model goes on after a failed call
    assert tool_server.calls == []
    assert tool_server.rejected and set(tool_server.rejected) == {header}
    (call,) = events.items_of("mcpToolCall")
    assert call["status"] == "failed"
    assert call["error"]["message"]
    (record,) = fake.entries("tool_result")
    assert record["ok"] is False


@pytest.mark.parametrize(("approvals", "decision"), [("decline", "decline"), ("approve", "accept")])
async def test_approval_requests_are_answered_by_policy(
    driver: CodexDriver,
    fake: FakeCodex,
    events: Events,
    tmp_path: Path,
    approvals: str,
    decision: str,
) -> None:
    fake.script([{"request_approval": "commandExecution"}, {"request_approval": "fileChange"}])
    result = await bounded(driver.run_turn(turn_input(fake, tmp_path, approvals=approvals), events))
    assert result.status == "completed", result.error
    assert [a["decision"] for a in fake.entries("approval")] == [decision, decision]
    # The requests are part of the run's record too.
    assert "item/commandExecution/requestApproval" in events.types()
    assert "item/fileChange/requestApproval" in events.types()


async def test_failed_turn_carries_codex_error(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    fake.script([{"fail": "model endpoint returned 500"}])
    result = await bounded(driver.run_turn(turn_input(fake, tmp_path), events))
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith("turn_failed: model endpoint returned 500")
    assert result.session_ref is not None
    assert turn_events(events)[-2:] == ["error", "turn/completed"]


async def test_close_during_a_turn_stops_the_process(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    fake.script([reach("ready"), {"wait_for_file": str(fake.point("never"))}])
    running = asyncio.create_task(driver.run_turn(turn_input(fake, tmp_path), events))
    await events.reached("ready")
    pid = fake.pid()
    await bounded(driver.close())
    result = await bounded(running)
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith("driver_closed: ")
    assert not pid_alive(pid)
    await bounded(driver.close())  # idempotent
    again = await bounded(driver.run_turn(turn_input(fake, tmp_path), Events()))
    assert again.error is not None and again.error.startswith("driver_closed: ")


async def test_close_terminates_an_idle_process(
    driver: CodexDriver, fake: FakeCodex, tmp_path: Path
) -> None:
    fake.script([{"touch_file": str(fake.point("ran"))}])
    result = await bounded(driver.run_turn(turn_input(fake, tmp_path), Events()))
    assert result.status == "completed", result.error
    pid = int(fake.point("ran").read_text())
    assert pid_alive(pid)
    await bounded(driver.close())
    assert not pid_alive(pid)


async def test_second_concurrent_turn_is_refused(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    go, running = await held_turn(driver, fake, events, tmp_path)
    refused = await bounded(driver.run_turn(turn_input(fake, tmp_path), Events()))
    assert refused.error is not None and refused.error.startswith("turn_in_progress: ")
    go.touch()
    assert (await bounded(running)).status == "completed"


async def test_missing_cli_fails_with_how_to_install_it_and_point_it_at_a_model(
    fake: FakeCodex, state_dir: Path, tmp_path: Path
) -> None:
    driver = CodexDriver(driver_context(state_dir, ("/nonexistent/codex", "app-server")))
    try:
        result = await bounded(driver.run_turn(turn_input(fake, tmp_path), Events()))
    finally:
        await driver.close()
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith("spawn_failed: ")
    assert "npm install -g @openai/codex@0.171.0" in result.error
    assert '"base_url"' in result.error and '"model"' in result.error


async def test_provider_that_exits_at_startup_fails_with_its_stderr(
    fake: FakeCodex, state_dir: Path, tmp_path: Path
) -> None:
    command = (sys.executable, "-c", "import sys; sys.stderr.write('no auth\\n'); sys.exit(4)")
    driver = CodexDriver(driver_context(state_dir, command))
    try:
        result = await bounded(driver.run_turn(turn_input(fake, tmp_path), Events()))
    finally:
        await driver.close()
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith("startup_failed: ")
    assert "status 4" in result.error
    assert "no auth" in result.error


async def test_invalid_config_is_refused_before_anything_starts(
    driver: CodexDriver, fake: FakeCodex, tmp_path: Path
) -> None:
    result = await bounded(driver.run_turn(turn_input(fake, tmp_path, sandbox="yolo"), Events()))
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith("invalid_config: sandbox")
    assert not fake.log_path.exists()


async def test_turn_timeout_interrupts_the_turn(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    fake.script([{"wait_for_file": str(fake.point("never"))}])
    turn = turn_input(fake, tmp_path, turn_timeout_seconds=1)
    result = await bounded(driver.run_turn(turn, events))
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith("turn_timeout: ")
    assert len(fake.received("turn/interrupt")) == 1
    assert events.items[-1].payload["turn"]["status"] == "interrupted"


async def test_interrupt_before_the_turn_has_an_id_is_sent_once_it_has_one(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    fake.script([{"wait_for_file": str(fake.point("never"))}])
    running = asyncio.create_task(driver.run_turn(turn_input(fake, tmp_path), events))
    await asyncio.sleep(0)  # let the turn begin: it is now spawning the provider
    await bounded(driver.interrupt())
    result = await bounded(running)
    assert result.status == "interrupted"
    assert len(fake.received("turn/interrupt")) == 1


async def test_steer_racing_turn_start_waits_for_the_turn(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    go = fake.point("go")
    fake.script({"consume_steer": True, "steps": [{"wait_for_file": str(go)}]})
    running = asyncio.create_task(driver.run_turn(turn_input(fake, tmp_path), events))
    await asyncio.sleep(0)  # let the turn begin: it is now spawning the provider
    assert await bounded(driver.steer("m-1", "Early but welcome.")) is True
    go.touch()
    result = await bounded(running)
    assert result.status == "completed", result.error
    texts = [m["content"][0]["text"] for m in events.items_of("userMessage")]
    assert texts == ["Fix the failing test.", "Early but welcome."]


async def test_under_codex_tool_gating_an_unannotated_tool_is_refused_under_never(
    driver: CodexDriver, fake: FakeCodex, tool_server: ToolServer, events: Events, tmp_path: Path
) -> None:
    # `echo` has no MCP annotations: Codex's own gate ("auto") refuses it under "never".
    fake.script([{"call_tool": {"name": "echo", "arguments": {"text": "x"}}}, {"message": "ok"}])
    turn = turn_input(fake, tmp_path, tools=tool_server, tool_approval="auto")
    result = await bounded(driver.run_turn(turn, events))
    assert result.status == "completed", result.error
    assert tool_server.calls == []
    (call,) = events.items_of("mcpToolCall")
    assert call["status"] == "failed"
    assert call["error"]["message"] == (
        "MCP tool call requires approval, but approval policy is never"
    )
    assert "mcpServer/elicitation/request" not in events.types()


async def test_a_tool_approval_asked_on_request_is_granted_for_the_runs_own_tools(
    driver: CodexDriver, fake: FakeCodex, tool_server: ToolServer, events: Events, tmp_path: Path
) -> None:
    fake.script([{"call_tool": {"name": "echo", "arguments": {"text": "x"}}}])
    turn = turn_input(
        fake, tmp_path, tools=tool_server, tool_approval="auto", approval_policy="on-request"
    )
    result = await bounded(driver.run_turn(turn, events))
    assert result.status == "completed", result.error
    assert tool_server.calls == [{"name": "echo", "arguments": {"text": "x"}}]
    kinds = events.types()
    asked = kinds.index("mcpServer/elicitation/request")
    assert kinds[asked + 1] == "serverRequest/resolved"
    assert [a["decision"] for a in fake.entries("approval")] == ["accept"]


@pytest.mark.parametrize(
    ("policy", "asked", "status"), [("never", False, None), ("on-request", True, "declined")]
)
async def test_an_escalated_shell_command_follows_the_approval_policy_and_the_turn_goes_on(
    driver: CodexDriver,
    fake: FakeCodex,
    events: Events,
    tmp_path: Path,
    policy: str,
    asked: bool,
    status: str | None,
) -> None:
    fake.script(
        [
            {"shell": {"command": "echo inside"}},
            {"shell": {"command": "touch /etc/paperclip-test", "escalate": True}},
            {"message": "went on"},
        ]
    )
    result = await bounded(
        driver.run_turn(turn_input(fake, tmp_path, approval_policy=policy), events)
    )
    assert result.status == "completed", result.error
    commands = events.items_of("commandExecution")
    assert commands[0]["aggregatedOutput"] == "inside\n" and commands[0]["exitCode"] == 0
    assert ("item/commandExecution/requestApproval" in events.types()) is asked
    assert [c["status"] for c in commands[1:]] == ([status] if status else [])
    assert events.items_of("agentMessage")[0]["text"] == "went on"


async def test_the_runners_own_variables_never_reach_codex(
    driver: CodexDriver,
    fake: FakeCodex,
    tool_server: ToolServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAPERCLIP_RUNNER_CREDENTIAL", "pcr_secret")
    fake.script([{"message": "ok"}])
    result = await bounded(driver.run_turn(turn_input(fake, tmp_path, tools=tool_server), Events()))
    assert result.status == "completed", result.error
    (boot,) = fake.entries("started")
    assert boot["env"] == [MCP_TOKEN_ENV_VAR]


async def test_standing_rules_ride_as_developer_instructions(
    driver: CodexDriver, fake: FakeCodex, tmp_path: Path
) -> None:
    fake.script([{"message": "ok"}])
    turn = turn_input(fake, tmp_path)
    turn = dataclasses.replace(turn, system="Report through Paperclip.")
    result = await bounded(driver.run_turn(turn, Events()))
    assert result.status == "completed", result.error
    (started,) = fake.received("thread/start")
    assert started["params"]["developerInstructions"] == "Report through Paperclip."
