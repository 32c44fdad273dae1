"""The driver against the fake Pi as a real process, with a real MCP tool server."""

from __future__ import annotations

import asyncio
import os

import pytest
from paperclip_hookspecs.providers import DriverContext, TurnInput
from paperclip_pi.driver import PiDriver
from paperclip_provider_kit.testing import WAIT, Events, ToolServer, scripted_turn
from paperclip_provider_kit.testing import ScriptFolder as Fake

pytestmark = pytest.mark.process


def turn(state_dir, tool_server: ToolServer | None, **extra) -> TurnInput:
    return scripted_turn(state_dir, tool_server, **extra)


async def test_a_turn_calls_the_runs_tools_and_ends_with_its_answer(
    driver: PiDriver, fake: Fake, tool_server: ToolServer, events: Events, state_dir
):
    fake.script(
        "m1",
        [
            {"call_tool": {"name": "echo", "arguments": {"text": "hi"}}},
            {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
            {"message": "All done."},
        ],
    )
    result = await asyncio.wait_for(driver.run_turn(turn(state_dir, tool_server), events), WAIT)

    assert result.status == "completed", result.error
    assert result.answer == "All done." and result.session_ref
    assert [c["name"] for c in tool_server.calls] == ["echo", "finish"]
    ends = [e.payload for e in events.items if e.type == "tool_execution_end"]
    assert [(e["toolName"], e["isError"]) for e in ends] == [
        ("paperclip_echo", False),
        ("paperclip_finish", False),
    ]
    assert events.types()[0] == "agent_start" and events.types()[-1] == "agent_end"
    (started,) = [e for e in fake.log() if e["type"] == "started"]
    assert started["system"] == ["Standing rules."] and started["tools"]
    assert started["env"] == ["PAPERCLIP_MCP_BEARER_TOKEN", "PAPERCLIP_MCP_URL"]


async def test_a_steer_is_read_before_the_next_model_call(
    driver: PiDriver, fake: Fake, events: Events, state_dir, tmp_path
):
    go = tmp_path / "go"
    fake.script(
        "m1", [{"shell": "true"}, {"wait_for_file": str(go), "timeout": 30}, {"message": "Done."}]
    )
    run = asyncio.ensure_future(driver.run_turn(turn(state_dir, None), events))
    await events.wait_for("tool_execution_end")
    assert await driver.steer("m-1", "Also the changelog.")
    go.write_text("")
    result = await asyncio.wait_for(run, WAIT)
    assert result.status == "completed" and result.answer == "Done."
    users = [
        e.payload["message"]["content"][0]["text"]
        for e in events.items
        if e.type == "message_end" and e.payload["message"]["role"] == "user"
    ]
    assert users == ["Fix the build", "Also the changelog."]
    assert events.types().count("agent_end") == 1


async def test_an_interrupt_ends_the_turn_interrupted(
    driver, fake: Fake, events: Events, state_dir, tmp_path
):
    fake.script(
        "m1", [{"wait_for_file": str(tmp_path / "never"), "timeout": 60}, {"message": "late"}]
    )
    run = asyncio.ensure_future(driver.run_turn(turn(state_dir, None), events))
    await events.wait_for("agent_start")
    await driver.interrupt()
    result = await asyncio.wait_for(run, WAIT)
    assert result.status == "interrupted"


async def test_a_failed_model_call_fails_the_turn(driver, fake: Fake, events: Events, state_dir):
    fake.script("m1", [{"fail": "rate limited"}])
    result = await asyncio.wait_for(driver.run_turn(turn(state_dir, None), events), WAIT)
    assert result.status == "failed" and result.error == "turn_failed: rate limited"


async def test_a_later_turn_resumes_the_session_in_a_new_process(
    fake: Fake, events: Events, state_dir
):
    fake.script("m1", {"turns": [[{"message": "one"}], [{"message": "two"}]]})
    env = {"PYTHONPATH": os.path.dirname(os.path.dirname(__file__))}
    first = PiDriver(DriverContext(state_dir=str(state_dir), env=env, command=fake.command()))
    try:
        one = await asyncio.wait_for(first.run_turn(turn(state_dir, None), events), WAIT)
    finally:
        await first.close()
    second = PiDriver(DriverContext(state_dir=str(state_dir), env=env, command=fake.command()))
    try:
        two = await asyncio.wait_for(
            second.run_turn(turn(state_dir, None, session_ref=one.session_ref), events), WAIT
        )
    finally:
        await second.close()
    assert (one.answer, two.answer) == ("one", "two") and two.session_ref == one.session_ref


async def test_pi_dying_mid_turn_fails_the_turn(driver, fake: Fake, events: Events, state_dir):
    fake.script("m1", [{"exit": 3}])
    result = await asyncio.wait_for(driver.run_turn(turn(state_dir, None), events), WAIT)
    assert result.status == "failed" and result.error.startswith("provider_exited")


async def test_the_runners_own_variables_do_not_reach_pi(
    driver, fake: Fake, events: Events, state_dir, monkeypatch
):
    monkeypatch.setenv("PAPERCLIP_RUNNER_CREDENTIAL", "secret")
    fake.script("m1", [{"message": "ok"}])
    result = await asyncio.wait_for(driver.run_turn(turn(state_dir, None), events), WAIT)
    assert result.status == "completed"
    (started,) = [e for e in fake.log() if e["type"] == "started"]
    assert started["env"] == [] and not started["tools"]
