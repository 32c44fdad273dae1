"""The driver against the fake Pi as a real process, with a real MCP tool server."""

from __future__ import annotations

import asyncio

import pytest
from paperclip_pi.driver import PiDriver
from paperclip_provider_kit.testing import WAIT, Events, ToolServer, run_turn, scripted_turn
from paperclip_provider_kit.testing import ScriptFolder as Fake
from paperclip_provider_kit.testing import turns as shared

pytestmark = pytest.mark.process


async def test_a_turn_calls_the_runs_tools_and_ends_with_its_answer(
    driver: PiDriver, fake: Fake, tool_server: ToolServer, events: Events, state_dir
):
    await shared.tools_then_answer(driver, fake, tool_server, events, state_dir)
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
    run = asyncio.ensure_future(driver.run_turn(scripted_turn(state_dir, None), events))
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
    driver, fake: Fake, events: Events, state_dir
):
    await shared.interrupted(driver, fake, events, state_dir, started="agent_start")


async def test_a_failed_model_call_fails_the_turn(driver, fake: Fake, events: Events, state_dir):
    fake.script("m1", [{"fail": "rate limited"}])
    result = await run_turn(driver, scripted_turn(state_dir, None), events)
    assert result.status == "failed" and result.error == "turn_failed: rate limited"


async def test_a_later_turn_resumes_the_session_in_a_new_process(
    drivers, fake: Fake, events: Events, state_dir
):
    fake.script("m1", {"turns": [[{"message": "one"}], [{"message": "two"}]]})
    one = await drivers.turn(scripted_turn(state_dir, None), events)
    resumed = scripted_turn(state_dir, None, session_ref=one.session_ref)
    two = await drivers.turn(resumed, events)
    assert (one.answer, two.answer) == ("one", "two") and two.session_ref == one.session_ref


async def test_pi_dying_mid_turn_fails_the_turn(driver, fake: Fake, events: Events, state_dir):
    fake.script("m1", [{"exit": 3}])
    result = await run_turn(driver, scripted_turn(state_dir, None), events)
    assert result.status == "failed" and result.error.startswith("provider_exited")


async def test_the_runners_own_variables_do_not_reach_pi(
    driver, fake: Fake, events: Events, state_dir, monkeypatch
):
    started = await shared.started_without_the_runners_variables(
        driver, fake, events, state_dir, monkeypatch
    )
    assert started["env"] == [] and not started["tools"]
