"""The Codex driver against the fake app-server: real processes, real JSON-RPC, real MCP."""

from __future__ import annotations

import asyncio
import os
import signal
import tomllib
from pathlib import Path

import pytest
from codex_testing import (
    Events,
    FakeCodex,
    ToolServer,
    bounded,
    driver_context,
    held_turn,
    reach,
    turn_events,
    turn_input,
)
from paperclip_codex.config import MCP_TOKEN_ENV_VAR
from paperclip_codex.driver import CodexDriver

pytestmark = pytest.mark.process


async def test_turn_calls_two_tools_and_sends_a_message(
    driver: CodexDriver, fake: FakeCodex, tool_server: ToolServer, events: Events, tmp_path: Path
) -> None:
    fake.script(
        [
            {"call_tool": {"name": "echo", "arguments": {"text": "hello"}}},
            {"call_tool": {"name": "add", "arguments": {"a": 2, "b": 3}}},
            {"message": "Both tools worked."},
        ]
    )
    result = await bounded(driver.run_turn(turn_input(fake, tmp_path, tools=tool_server), events))

    assert result.status == "completed", result.error
    assert result.error is None
    (started,) = fake.received("thread/start")
    assert result.session_ref is not None
    # Every notification, in wire order, up to and including turn/completed.
    assert events.types() == [
        "thread/started",
        "mcpServer/startupStatus/updated",  # starting: the tools are listed
        "mcpServer/startupStatus/updated",  # ready
        "thread/status/changed",  # active
        "turn/started",
        "item/started",  # the prompt, as a userMessage item
        "item/completed",
        "item/started",  # echo
        "item/completed",
        "thread/tokenUsage/updated",  # the model response that called it
        "item/started",  # add
        "item/completed",
        "thread/tokenUsage/updated",
        "item/started",  # the agent's message, streamed
        "item/agentMessage/delta",
        "item/agentMessage/delta",
        "item/agentMessage/delta",
        "item/completed",
        "thread/tokenUsage/updated",
        "thread/status/changed",  # idle
        "turn/completed",
    ]
    startup = [e.payload["status"] for e in events.items if e.type.startswith("mcpServer/")]
    assert startup == ["starting", "ready"]
    assert events.items[0].payload["thread"]["id"] == result.session_ref
    assert events.items[-1].payload["turn"]["status"] == "completed"
    # Like Codex, turn/completed carries the turn's final message.
    (final,) = events.items[-1].payload["turn"]["items"]
    assert final["type"] == "agentMessage" and final["text"] == "Both tools worked."

    # The tools ran on the server, with the model's arguments, and their results
    # came back to the provider (its log) and into the events.
    assert tool_server.calls == [
        {"name": "echo", "arguments": {"text": "hello"}},
        {"name": "add", "arguments": {"a": 2, "b": 3}},
    ]
    assert tool_server.rejected == []
    results = fake.entries("tool_result")
    assert [r["ok"] for r in results] == [True, True]
    assert results[0]["result"]["content"][0]["text"] == "echo: hello"
    assert results[1]["result"]["content"][0]["text"] == "5"
    calls = events.items_of("mcpToolCall")
    assert [(c["server"], c["tool"], c["status"]) for c in calls] == [
        ("paperclip", "echo", "completed"),
        ("paperclip", "add", "completed"),
    ]
    assert calls[0]["arguments"] == {"text": "hello"}
    assert calls[0]["result"]["content"][0]["text"] == "echo: hello"
    (message,) = events.items_of("agentMessage")
    assert message["text"] == "Both tools worked."
    deltas = [e.payload["delta"] for e in events.items if e.type == "item/agentMessage/delta"]
    assert "".join(deltas) == "Both tools worked."

    # The protocol as sent: the handshake, the thread, the prompt; JSON lines
    # without a "jsonrpc" member.
    received = [e["message"] for e in fake.entries("received")]
    assert [m.get("method") for m in received] == [
        "initialize",
        "initialized",
        "thread/start",
        "turn/start",
    ]
    assert all("jsonrpc" not in m for m in received)
    assert received[0]["params"]["clientInfo"]["name"] == "paperclip"
    assert started["params"]["approvalPolicy"] == "never"
    assert started["params"]["sandbox"] == "workspace-write"
    assert started["params"]["cwd"] == str(tmp_path)
    (turn_start,) = fake.received("turn/start")
    assert turn_start["params"]["threadId"] == result.session_ref
    assert turn_start["params"]["input"] == [{"type": "text", "text": "Fix the failing test."}]

    # The MCP server came from -c overrides, the token through the environment.
    (boot,) = fake.entries("started")
    assert boot["mcp_servers"] == {
        "paperclip": {
            "url": tool_server.url,
            "bearer_token_env_var": MCP_TOKEN_ENV_VAR,
            "bearer_token_set": True,
            # Paperclip's own tools run without asking Codex's approval (issue 9).
            "default_tools_approval_mode": "approve",
        }
    }
    # ... and the static settings from config.toml in CODEX_HOME, inside state_dir.
    assert boot["codex_home"].startswith(str(tmp_path / "state"))
    assert boot["config"]["approval_policy"] == "never"
    assert boot["config"]["check_for_update_on_startup"] is False
    assert boot["config"]["analytics"] == {"enabled": False}
    assert boot["config"]["features"]["plugins"] is False


async def test_model_endpoint_settings_reach_codex(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    fake.script([{"message": "ok"}])
    turn = turn_input(
        fake,
        tmp_path,
        base_url="http://127.0.0.1:9/v1",
        model="gpt-test",
        env_key="TEST_MODEL_API_KEY",
        config_overrides={"model_providers.paperclip.request_max_retries": 0},
    )
    result = await bounded(driver.run_turn(turn, events))
    assert result.status == "completed", result.error
    (boot,) = fake.entries("started")
    config = boot["config"]
    assert config["model"] == "gpt-test"
    assert config["model_provider"] == "paperclip"
    assert config["model_providers"]["paperclip"] == {
        "name": "Paperclip model endpoint",
        "base_url": "http://127.0.0.1:9/v1",
        "env_key": "TEST_MODEL_API_KEY",
        "wire_api": "responses",
        "request_max_retries": 0,
    }
    (started,) = fake.received("thread/start")
    assert started["params"]["model"] == "gpt-test"
    with (Path(boot["codex_home"]) / "config.toml").open("rb") as handle:
        written = tomllib.load(handle)
    assert written["model_providers"]["paperclip"]["base_url"] == "http://127.0.0.1:9/v1"
    assert "request_max_retries" not in written["model_providers"]["paperclip"]  # per run: -c


async def test_resume_continues_the_thread_in_a_new_process(
    fake: FakeCodex, state_dir: Path, tmp_path: Path
) -> None:
    fake.script({"turns": [[{"message": "first"}], [{"message": "second"}]]})
    first = CodexDriver(driver_context(state_dir, fake.command()))
    try:
        one = await bounded(first.run_turn(turn_input(fake, tmp_path), Events()))
    finally:
        await first.close()
    assert one.status == "completed", one.error

    second = CodexDriver(driver_context(state_dir, fake.command()))
    events = Events()
    try:
        two = await bounded(
            second.run_turn(turn_input(fake, tmp_path, session_ref=one.session_ref), events)
        )
    finally:
        await second.close()
    assert two.status == "completed", two.error
    assert two.session_ref == one.session_ref
    (resume,) = fake.received("thread/resume")
    assert resume["params"]["threadId"] == one.session_ref
    assert len(fake.received("thread/start")) == 1  # only the first driver started one
    assert "thread/started" not in events.types()
    assert [m["text"] for m in events.items_of("agentMessage")] == ["second"]


async def test_later_turn_on_the_same_driver_reuses_the_loaded_thread(
    driver: CodexDriver, fake: FakeCodex, tmp_path: Path
) -> None:
    fake.script({"turns": [[{"message": "first"}], [{"message": "second"}]]})
    one = await bounded(driver.run_turn(turn_input(fake, tmp_path), Events()))
    events = Events()
    two = await bounded(
        driver.run_turn(turn_input(fake, tmp_path, session_ref=one.session_ref), events)
    )
    assert two.status == "completed", two.error
    assert two.session_ref == one.session_ref
    assert len(fake.entries("started")) == 1  # one process for both turns
    assert fake.received("thread/resume") == []
    assert [m["text"] for m in events.items_of("agentMessage")] == ["second"]


async def test_a_thread_that_cannot_be_resumed_fails_with_a_clear_code(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    fake.script([{"message": "never"}])
    result = await bounded(
        driver.run_turn(turn_input(fake, tmp_path, session_ref="no-such-thread"), events)
    )
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith("resume_failed: ")
    assert "no-such-thread" in result.error
    assert result.session_ref == "no-such-thread"
    assert fake.received("thread/start") == []
    assert fake.received("turn/start") == []


async def test_resume_falls_back_to_a_fresh_thread_when_asked(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    fake.script([{"message": "fresh start"}])
    turn = turn_input(fake, tmp_path, session_ref="no-such-thread", resume_fallback="fresh")
    result = await bounded(driver.run_turn(turn, events))
    assert result.status == "completed", result.error
    assert result.session_ref not in (None, "no-such-thread")
    assert len(fake.received("thread/resume")) == 1
    assert len(fake.received("thread/start")) == 1
    assert events.types()[0] == "thread/started"


async def test_steer_is_acknowledged_and_consumed_at_the_next_step(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    go = fake.point("go")
    fake.script(
        {
            "consume_steer": True,
            "steps": [
                reach("ready"),
                {"wait_for_file": str(go)},
                {"message": "Handled the steer."},
            ],
        }
    )
    assert await driver.steer("m-0", "too early") is False  # no turn is running
    running = asyncio.create_task(driver.run_turn(turn_input(fake, tmp_path), events))
    await events.reached("ready")

    assert await bounded(driver.steer("m-1", "Also update the changelog.")) is True
    go.touch()
    result = await bounded(running)

    assert result.status == "completed", result.error
    (steer,) = fake.received("turn/steer")
    (turn_started,) = [e for e in events.items if e.type == "turn/started"]
    assert steer["params"] == {
        "threadId": result.session_ref,
        "expectedTurnId": turn_started.payload["turn"]["id"],
        "input": [{"type": "text", "text": "Also update the changelog."}],
    }
    texts = [m["content"][0]["text"] for m in events.items_of("userMessage")]
    assert texts == ["Fix the failing test.", "Also update the changelog."]
    # The steer entered the turn before the model's next output, like Codex.
    kinds = [e.payload["item"]["type"] for e in events.items if e.type == "item/completed"]
    assert kinds == ["userMessage", "userMessage", "agentMessage"]
    assert await driver.steer("m-2", "too late") is False


async def test_steer_acknowledged_but_not_yet_read_leaves_no_user_message(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    go, running = await held_turn(driver, fake, events, tmp_path)
    assert await bounded(driver.steer("m-1", "Read me later.")) is True
    go.touch()
    result = await bounded(running)
    assert result.status == "completed", result.error
    texts = [m["content"][0]["text"] for m in events.items_of("userMessage")]
    assert texts == ["Fix the failing test."]


async def test_interrupt_ends_the_turn_as_interrupted(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    fake.script(
        [
            reach("ready"),
            {"wait_for_file": str(fake.point("never"))},
            {"message": "unreachable"},
        ]
    )
    running = asyncio.create_task(driver.run_turn(turn_input(fake, tmp_path), events))
    await events.reached("ready")
    await bounded(driver.interrupt())
    result = await bounded(running)

    assert result.status == "interrupted"
    assert result.error is None
    assert result.session_ref is not None
    (interrupt,) = fake.received("turn/interrupt")
    assert interrupt["params"]["threadId"] == result.session_ref
    assert events.items[-1].type == "turn/completed"
    assert events.items[-1].payload["turn"]["status"] == "interrupted"
    assert events.items_of("agentMessage") == []


async def test_provider_killed_mid_turn_fails_the_turn_and_the_next_turn_recovers(
    driver: CodexDriver, fake: FakeCodex, tmp_path: Path
) -> None:
    fake.script(
        {
            "turns": [
                [reach("ready"), {"wait_for_file": str(fake.point("never"))}],
                [{"message": "back again"}],
            ]
        }
    )
    events = Events()
    running = asyncio.create_task(driver.run_turn(turn_input(fake, tmp_path), events))
    await events.reached("ready")
    pid = fake.pid()
    os.kill(pid, signal.SIGKILL)
    result = await bounded(running)

    assert result.status == "failed"
    assert result.error is not None and result.error.startswith("provider_exited: ")
    assert "signal 9" in result.error
    assert result.session_ref is not None
    assert turn_events(events)[:2] == ["thread/started", "turn/started"]
    assert "turn/completed" not in events.types()

    # The next turn starts a new process and resumes the same thread.
    again = Events()
    next_result = await bounded(
        driver.run_turn(turn_input(fake, tmp_path, session_ref=result.session_ref), again)
    )
    assert next_result.status == "completed", next_result.error
    assert next_result.session_ref == result.session_ref
    assert len(fake.entries("started")) == 2
    assert [m["text"] for m in again.items_of("agentMessage")] == ["back again"]


async def test_provider_exiting_mid_turn_reports_its_status(
    driver: CodexDriver, fake: FakeCodex, events: Events, tmp_path: Path
) -> None:
    fake.script([{"message": "about to go"}, {"exit": 3}])
    result = await bounded(driver.run_turn(turn_input(fake, tmp_path), events))
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith("provider_exited: the provider process exited with status 3")
    # What arrived before the exit was still emitted, in order.
    assert events.items_of("agentMessage")[0]["text"] == "about to go"
