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
from paperclip_codex.fake_app_server import Script, ScriptError, load_script

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
        "paperclip_codex.fake_app_server",
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
