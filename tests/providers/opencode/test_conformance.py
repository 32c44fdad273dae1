"""The fake server agrees with the real OpenCode on what the driver and the engine read.

One scenario (a tool that answers, a tool that fails, a closing message) runs
through the real driver against the fake (always) and the pinned CLI with the
scripted model; both reduce to the same recording in ``data/``, which says
where each answer's tokens and cost come. The usage the driver reports is, answer
by answer, what the model sent: the scripted endpoint's for the real CLI, the
fake's own (its log) for the fake.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("paperclip_opencode", reason="the opencode plugin is not installed")

from paperclip_hookspecs.providers import DriverContext, McpEndpoint, ProviderEvent, TurnInput
from paperclip_opencode.driver import OpenCodeDriver

from tests.providers.conformance import WAIT, check_recording, recorded, tool_server
from tests.providers.opencode.cli import OPENCODE
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import FunctionCall, calls, say

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

RECORDING = Path(__file__).with_name("data") / f"opencode-{OPENCODE.version}.json"
FAKE_SCRIPT = [
    {"call_tool": {"name": "lookup", "arguments": {"key": "a"}}},
    {"call_tool": {"name": "broken", "arguments": {}}},
    {"message": "done"},
]
MODEL_SCRIPT = [
    calls(FunctionCall("paperclip_lookup", {"key": "a"})),
    calls(FunctionCall("paperclip_broken", {})),
    say("done"),
]


COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")


class Reported(list[Any]):
    """``DriverContext.report_usage``: the usage the driver reported, in order."""

    async def __call__(self, usage: Any) -> None:
        self.append(usage)

    def counts(self) -> list[dict[str, int]]:
        return [{key: getattr(u, key) for key in COUNTS} for u in self]


async def run_scenario(
    command: tuple[str, ...], url: str, tmp: Path, config: dict[str, Any], reported: Reported
) -> tuple[Any, list[ProviderEvent]]:
    events: list[ProviderEvent] = []

    async def emit(event: ProviderEvent) -> None:
        events.append(event)

    root = Path(sys.modules["paperclip_opencode"].__file__ or "").parent.parent
    env = {
        "PYTHONPATH": str(root),
        "SCRIPTED_MODEL_API_KEY": "dummy",
        "HOME": str(tmp),
        **OPENCODE.env(),
    }
    context = DriverContext(state_dir=str(tmp / "state"), env=env, command=command)
    driver = OpenCodeDriver(dataclasses.replace(context, report_usage=reported))
    turn = TurnInput(
        run_id="conformance",
        prompt="Run the conformance scenario.",
        cwd=str(tmp),
        mcp=McpEndpoint("paperclip", url, "unused"),
        config=config,
        system="Standing rules.",
    )
    try:
        result = await asyncio.wait_for(driver.run_turn(turn, emit), WAIT)
    finally:
        await driver.close()
    return result, events


def reduce(result: Any, events: list[ProviderEvent]) -> dict[str, Any]:
    """What is read of a turn: the tools' final states, the messages, the end, the answer."""
    tools: dict[str, tuple[str, str]] = {}
    assistants: dict[str, str | None] = {}
    users: set[str] = set()
    updates: Counter[str] = Counter()  # completed updates of each answer
    finished: dict[str, Any] = {}  # each answer's step-finish tokens
    usage: dict[str, Any] = {}  # each answer's tokens and cost, as completed
    for event in events:
        if event.type == "message.part.updated":
            part = event.payload["part"]
            if part["type"] == "tool" and part["state"]["status"] in ("completed", "error"):
                tools.setdefault(part["callID"], (part["tool"], part["state"]["status"]))
            if part["type"] == "step-finish":
                finished[part["messageID"]] = (part["tokens"], part["cost"])
        elif event.type == "message.updated":
            info = event.payload["info"]
            if info["role"] == "user":
                users.add(info["id"])
            elif "completed" in info.get("time", {}):
                assistants[info["id"]] = info.get("finish")
                updates[info["id"]] += 1
                usage[info["id"]] = (info["tokens"], info["cost"])
    statuses = [e.payload["status"]["type"] for e in events if e.type == "session.status"]
    return {
        "result": [result.status, result.answer],
        "tools": [list(t) for t in tools.values()],
        "finishes": list(assistants.values()),
        "users": len(users),
        "last_status": statuses[-1] if statuses else None,
        "busy_first": statuses[:1] == ["busy"],
        # Each answer's usage: final when it completes (sent twice), as its step-finish says.
        "completed_updates": [updates[m] for m in assistants],
        "usage_fields": sorted({_fields(tokens) for tokens, _ in usage.values()}),
        "usage_as_step_finish": [usage[m] == finished.get(m) for m in assistants],
        "costs": sorted({type(cost).__name__ for _, cost in usage.values()}),
    }


def _fields(tokens: dict[str, Any]) -> str:
    return ",".join(sorted(k if k != "cache" else f"cache.{sorted(tokens[k])}" for k in tokens))


async def test_the_fake_behaves_like_the_recorded_real_cli(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "conformance.json").write_text(json.dumps(FAKE_SCRIPT))
    log = tmp_path / "fake.log"
    module = "paperclip_opencode_testing.fake_server"
    command = (sys.executable, "-m", module, "--script-dir", str(scripts), "--log", str(log))
    config = {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "conformance",
        "env_key": "SCRIPTED_MODEL_API_KEY",
    }
    reported = Reported()
    async with tool_server() as url:
        result, events = await run_scenario(command, url, tmp_path, config, reported)
    assert reduce(result, events) == recorded(RECORDING)
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    sent = [{k: e[k] for k in COUNTS} for e in entries if e["type"] == "usage"]
    assert reported.counts() == sent and len(sent) == len(FAKE_SCRIPT)


@pytest.mark.opencode_cli
async def test_the_real_cli_behaves_as_recorded(tmp_path: Path) -> None:
    cli = OPENCODE.require()
    with ModelEndpoint() as endpoint:
        endpoint.script("conformance", MODEL_SCRIPT)
        config = {
            "base_url": endpoint.url,
            "model": "conformance",
            "env_key": "SCRIPTED_MODEL_API_KEY",
        }
        reported = Reported()
        async with tool_server() as url:
            result, events = await run_scenario(
                (str(cli), "serve"), url, tmp_path, config, reported
            )
        sent = [u.as_dict() for u in endpoint.usage_sent("conformance")]
    check_recording(RECORDING, reduce(result, events), "PAPERCLIP_RECORD_OPENCODE")
    # Every answer's usage reported once, as the model sent it; OpenCode knows no price for it.
    assert reported.counts() == sent and len(sent) == len(MODEL_SCRIPT)
    assert {(u.model, u.cost_micros) for u in reported} == {("conformance", None)}
