"""The fake app-server on its own: script validation and the wire, without the driver."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from codex_testing import PLUGIN_ROOT, WAIT
from paperclip_codex_testing.fake_script import Script, ScriptError, load_script

pytestmark = pytest.mark.process


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_script_forms(tmp_path: Path) -> None:
    steps = [{"message": "hi"}]
    assert load_script(write(tmp_path / "a.json", steps)) == Script(turns=[steps])
    assert load_script(
        write(tmp_path / "b.json", {"steps": steps, "consume_steer": True})
    ) == Script(turns=[steps], consume_steer=True)
    two = {"turns": [steps, [{"sleep": 0}]]}
    script = load_script(write(tmp_path / "c.json", two))
    assert script.steps_for(0) == steps
    assert script.steps_for(5) == [{"sleep": 0}]  # the last list repeats


@pytest.mark.parametrize(
    "bad",
    [
        [{"say": "hi"}],
        [{"message": "a", "sleep": 1}],
        [{"call_tool": {"arguments": {}}}],
        [{"sleep": 1, "timeout": 2}],
        [{"expect_prompt": ""}],
        {"consume_steer": True},
        "steps",
    ],
)
def test_bad_scripts_are_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ScriptError):
        load_script(write(tmp_path / "bad.json", bad))


async def test_fake_answers_the_handshake_and_refuses_unknown_methods(tmp_path: Path) -> None:
    script = write(tmp_path / "s.json", [{"message": "hi"}])
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "paperclip_codex_testing.fake_app_server",
        "--script",
        str(script),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "CODEX_HOME": str(tmp_path), "PYTHONPATH": str(PLUGIN_ROOT)},
    )
    assert process.stdin is not None and process.stdout is not None

    async def exchange(message: dict[str, Any]) -> dict[str, Any]:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write((json.dumps(message) + "\n").encode())
        await process.stdin.drain()
        return dict(json.loads(await asyncio.wait_for(process.stdout.readline(), WAIT)))

    try:
        early = await exchange({"id": 1, "method": "thread/start", "params": {}})
        assert early["error"]["message"] == "Not initialized"
        hello = await exchange({"id": 2, "method": "initialize", "params": {"clientInfo": {}}})
        assert hello["result"]["codexHome"] == str(tmp_path)
        again = await exchange({"id": 3, "method": "initialize", "params": {"clientInfo": {}}})
        assert again["error"]["message"] == "Already initialized"
        unknown = await exchange({"id": 4, "method": "thread/fork", "params": {}})
        assert unknown["error"]["code"] == -32601
    finally:
        process.stdin.close()
        assert await asyncio.wait_for(process.wait(), WAIT) == 0


async def test_a_script_dir_gives_each_model_its_own_script(tmp_path: Path) -> None:
    from codex_testing import Events, bounded, driver_context
    from paperclip_codex.driver import CodexDriver
    from paperclip_hookspecs.providers import TurnInput

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    write(scripts / "agent-a.json", [{"message": "I am A"}])
    command = (
        sys.executable,
        "-m",
        "paperclip_codex_testing.fake_app_server",
        "--script-dir",
        str(scripts),
    )

    async def turn(model: str) -> tuple[Any, Events]:
        driver = CodexDriver(driver_context(tmp_path / model, command))
        events = Events()
        try:
            config = {"model": model, "request_timeout_seconds": WAIT}
            turn = TurnInput(run_id="r", prompt="go", cwd=str(tmp_path), config=config)
            return await bounded(driver.run_turn(turn, events)), events
        finally:
            await driver.close()

    result, events = await turn("agent-a")
    assert result.status == "completed", result.error
    assert [m["text"] for m in events.items_of("agentMessage")] == ["I am A"]
    missing, _ = await turn("agent-b")
    assert missing.error is not None and missing.error.startswith("thread_start_failed: ")
    assert "no script for model 'agent-b'" in missing.error


async def test_a_refused_tool_call_is_logged_with_is_error(
    driver: Any, fake: Any, tool_server: Any, events: Any, tmp_path: Path
) -> None:
    from codex_testing import bounded
    from paperclip_hookspecs.providers import TurnInput

    fake.script(
        [
            {"call_tool": {"name": "refuse"}},
            {"call_tool": {"name": "echo", "arguments": {"text": "x"}}},
        ]
    )
    turn = TurnInput(
        run_id="r",
        prompt="go",
        cwd=str(tmp_path),
        mcp=tool_server.endpoint(),
        config={"request_timeout_seconds": WAIT},
    )
    result = await bounded(driver.run_turn(turn, events))

    assert result.status == "completed", result.error
    refused, answered = fake.entries("tool_result")
    # The server answered both (ok); the first answer is a refusal, as the model reads it.
    assert (refused["name"], refused["ok"], refused["isError"]) == ("refuse", True, True)
    assert "not now" in refused["result"]["content"][0]["text"]
    assert (answered["name"], answered["ok"], answered["isError"]) == ("echo", True, False)
    assert [c["status"] for c in events.items_of("mcpToolCall")] == ["failed", "completed"]


@pytest.mark.parametrize(("prompt", "status"), [("Say 'ready'.", "completed"), ("Go.", "failed")])
async def test_expect_prompt_fails_a_turn_whose_prompt_lacks_the_text(
    driver: Any, fake: Any, events: Any, tmp_path: Path, prompt: str, status: str
) -> None:
    from codex_testing import bounded
    from paperclip_hookspecs.providers import TurnInput

    fake.script([{"expect_prompt": "'ready'"}, {"message": "ready"}])
    turn = TurnInput(
        run_id="r", prompt=prompt, cwd=str(tmp_path), config={"request_timeout_seconds": WAIT}
    )
    result = await bounded(driver.run_turn(turn, events))

    assert result.status == status
    if status == "failed":
        assert result.error is not None and "the prompt does not say" in result.error
        assert events.items_of("agentMessage") == []
