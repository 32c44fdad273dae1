"""The driver against the fake server as a real process, with a real MCP tool server."""

from __future__ import annotations

import asyncio
import json

import pytest
from paperclip_opencode.driver import OpenCodeDriver
from paperclip_provider_kit.testing import TOKEN, WAIT, Events, ToolServer, run_turn, scripted_turn
from paperclip_provider_kit.testing import ScriptFolder as Fake
from paperclip_provider_kit.testing import turns as shared

pytestmark = pytest.mark.process


async def test_a_turn_calls_the_runs_tools_and_ends_with_its_answer(
    driver: OpenCodeDriver, fake: Fake, tool_server: ToolServer, events: Events, state_dir
):
    result = await shared.tools_then_answer(driver, fake, tool_server, events, state_dir)
    assert result.session_ref and result.session_ref.startswith("ses_")
    tools = [
        e.payload["part"]
        for e in events.items
        if e.type == "message.part.updated"
        and e.payload["part"]["type"] == "tool"
        and e.payload["part"]["state"]["status"] == "completed"
    ]
    assert [t["tool"] for t in tools] == ["paperclip_echo", "paperclip_finish"]
    assert events.types()[-1] in ("session.idle", "session.status")
    # The standing rules rode as the prompt's system text; the token only in the environment.
    (started,) = [e for e in fake.log() if e["type"] == "started"]
    assert TOKEN not in str(started["config"]) and started["env"] == ["PAPERCLIP_MCP_BEARER_TOKEN"]
    prompts = [
        e for e in fake.log() if e["type"] == "received" and e["path"].endswith("prompt_async")
    ]
    assert json.loads(prompts[0]["body"])["system"] == "Standing rules."


async def test_a_follow_up_sent_during_the_turn_is_answered_before_it_ends(
    driver: OpenCodeDriver, fake: Fake, events: Events, state_dir, tmp_path
):
    go = tmp_path / "go"
    fake.script(
        "m1",
        {
            "turns": [
                [{"wait_for_file": str(go), "timeout": 30}, {"message": "First."}],
                [{"message": "Follow-up done."}],
            ]
        },
    )
    run = asyncio.ensure_future(driver.run_turn(scripted_turn(state_dir, None), events))
    await events.wait_for("session.status")
    assert await driver.steer("m-1", "Also the changelog.")
    go.write_text("")
    result = await asyncio.wait_for(run, WAIT)
    assert result.status == "completed" and result.answer == "Follow-up done."
    users = {
        e.payload["info"]["id"]
        for e in events.items
        if e.type == "message.updated" and e.payload["info"]["role"] == "user"
    }
    assert len(users) == 2


async def test_an_interrupt_ends_the_turn_interrupted(
    driver, fake: Fake, events: Events, state_dir
):
    await shared.interrupted(driver, fake, events, state_dir, started="session.status")


async def test_a_later_turn_resumes_the_session_in_a_new_process(
    drivers, fake: Fake, events: Events, state_dir
):
    fake.script("m1", {"turns": [[{"message": "one"}], [{"message": "two"}]]})
    one = await drivers.turn(scripted_turn(state_dir, None), events)
    async with drivers.driver() as second:
        resumed = scripted_turn(state_dir, None, session_ref=one.session_ref)
        two = await run_turn(second, resumed, events)
        missing = scripted_turn(state_dir, None, session_ref="ses_missing")
        gone = await run_turn(second, missing, events)
    assert (one.answer, two.answer) == ("one", "two") and two.session_ref == one.session_ref
    assert gone.status == "failed" and gone.error.startswith("resume_failed")


async def test_a_server_that_dies_mid_turn_fails_the_turn(
    driver, fake: Fake, events: Events, state_dir
):
    fake.script("m1", [{"exit": 3}])
    result = await run_turn(driver, scripted_turn(state_dir, None), events)
    assert result.status == "failed" and result.error.startswith("provider_exited")


async def test_a_bad_config_fails_before_anything_starts(
    driver, fake: Fake, events: Events, state_dir
):
    result = await driver.run_turn(scripted_turn(state_dir, None, config={"command": "sh"}), events)
    assert result.status == "failed" and result.error.startswith("invalid_config")
    assert fake.log() == []


async def test_the_runners_own_variables_do_not_reach_opencode(
    driver, fake: Fake, events: Events, state_dir, monkeypatch
):
    started = await shared.started_without_the_runners_variables(
        driver, fake, events, state_dir, monkeypatch
    )
    assert started["env"] == []
