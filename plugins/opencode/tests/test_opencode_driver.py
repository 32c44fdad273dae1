"""The driver against the fake server as a real process, with a real MCP tool server."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from paperclip_hookspecs.providers import TurnInput
from paperclip_opencode.driver import OpenCodeDriver
from paperclip_provider_kit.testing import TOKEN, WAIT, Events, ToolServer, scripted_turn
from paperclip_provider_kit.testing import ScriptFolder as Fake

pytestmark = pytest.mark.process


def turn(state_dir, tool_server: ToolServer | None, **extra) -> TurnInput:
    return scripted_turn(state_dir, tool_server, **extra)


async def test_a_turn_calls_the_runs_tools_and_ends_with_its_answer(
    driver: OpenCodeDriver, fake: Fake, tool_server: ToolServer, events: Events, state_dir
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
    assert (
        result.answer == "All done."
        and result.session_ref
        and result.session_ref.startswith("ses_")
    )
    assert [c["name"] for c in tool_server.calls] == ["echo", "finish"]
    assert tool_server.rejected == []
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
    run = asyncio.ensure_future(driver.run_turn(turn(state_dir, None), events))
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
    driver, fake: Fake, events: Events, state_dir, tmp_path
):
    fake.script(
        "m1", [{"wait_for_file": str(tmp_path / "never"), "timeout": 60}, {"message": "late"}]
    )
    run = asyncio.ensure_future(driver.run_turn(turn(state_dir, None), events))
    await events.wait_for("session.status")
    await driver.interrupt()
    result = await asyncio.wait_for(run, WAIT)
    assert result.status == "interrupted"


async def test_a_later_turn_resumes_the_session_in_a_new_process(
    fake: Fake, events: Events, state_dir, tmp_path
):
    fake.script("m1", {"turns": [[{"message": "one"}], [{"message": "two"}]]})
    env = {"PYTHONPATH": str(os.path.dirname(os.path.dirname(__file__)))}
    from paperclip_hookspecs.providers import DriverContext

    first = OpenCodeDriver(DriverContext(state_dir=str(state_dir), env=env, command=fake.command()))
    try:
        one = await asyncio.wait_for(first.run_turn(turn(state_dir, None), events), WAIT)
    finally:
        await first.close()
    second = OpenCodeDriver(
        DriverContext(state_dir=str(state_dir), env=env, command=fake.command())
    )
    try:
        two = await asyncio.wait_for(
            second.run_turn(turn(state_dir, None, session_ref=one.session_ref), events), WAIT
        )
        gone = await asyncio.wait_for(
            second.run_turn(turn(state_dir, None, session_ref="ses_missing"), events), WAIT
        )
    finally:
        await second.close()
    assert (one.answer, two.answer) == ("one", "two") and two.session_ref == one.session_ref
    assert gone.status == "failed" and gone.error.startswith("resume_failed")


async def test_a_server_that_dies_mid_turn_fails_the_turn(
    driver, fake: Fake, events: Events, state_dir
):
    fake.script("m1", [{"exit": 3}])
    result = await asyncio.wait_for(driver.run_turn(turn(state_dir, None), events), WAIT)
    assert result.status == "failed" and result.error.startswith("provider_exited")


async def test_a_bad_config_fails_before_anything_starts(
    driver, fake: Fake, events: Events, state_dir
):
    result = await driver.run_turn(turn(state_dir, None, config={"command": "sh"}), events)
    assert result.status == "failed" and result.error.startswith("invalid_config")
    assert fake.log() == []


async def test_the_runners_own_variables_do_not_reach_opencode(
    driver, fake: Fake, events: Events, state_dir, monkeypatch
):
    monkeypatch.setenv("PAPERCLIP_RUNNER_CREDENTIAL", "secret")
    fake.script("m1", [{"message": "ok"}])
    result = await asyncio.wait_for(driver.run_turn(turn(state_dir, None), events), WAIT)
    assert result.status == "completed"
    (started,) = [e for e in fake.log() if e["type"] == "started"]
    assert started["env"] == []
