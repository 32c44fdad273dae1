"""The conformance scenario's pieces: its tools on loopback, its turn, its recordings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from paperclip_hookspecs.providers import ProviderEvent, TurnInput, TurnResult
from paperclip_provider_kit.mcp_client import call_tool, list_tools
from paperclip_provider_kit.testing.conformance import (
    check_recording,
    conformance_tools,
    recorded,
    run_conformance_turn,
)


async def test_lookup_answers_and_broken_fails() -> None:
    async with conformance_tools() as url:
        server = {"url": url}
        assert sorted(await list_tools(server)) == ["broken", "lookup"]
        assert await call_tool(server, "lookup", {"key": "a"}) == (True, "value of a")
        ok, text = await call_tool(server, "broken", {})
        assert not ok and "broken" in text  # mcp 2 names the tool, not the error


class Driver:
    """A driver that answers each turn at once, with what it was given."""

    def __init__(self) -> None:
        self.closed = False
        self.turns: list[TurnInput] = []

    async def run_turn(self, turn: TurnInput, emit: Any) -> TurnResult:
        self.turns.append(turn)
        await emit(ProviderEvent(type="said", payload={"prompt": turn.prompt}))
        return TurnResult(status="completed", answer="done")

    async def close(self) -> None:
        self.closed = True


async def test_the_turn_runs_once_and_the_driver_is_closed(tmp_path: Path) -> None:
    driver = Driver()
    config = {"model": "conformance"}
    result, events = await run_conformance_turn(
        driver, "http://t/mcp", tmp_path, config, run_id="r"
    )
    assert (result.status, result.answer, driver.closed) == ("completed", "done", True)
    (turn,) = driver.turns
    assert (turn.run_id, turn.cwd, turn.config, turn.mcp and turn.mcp.url) == (
        "r",
        str(tmp_path),
        config,
        "http://t/mcp",
    )
    assert [e.type for e in events] == ["said"]


def test_a_recording_is_made_where_asked_and_compared_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "data" / "cli-1.0.json"
    monkeypatch.setenv("PAPERCLIP_RECORD_CLI", "1")
    check_recording(path, {"result": ["completed", "done"]}, "PAPERCLIP_RECORD_CLI")
    assert recorded(path) == {"result": ["completed", "done"]}
    monkeypatch.delenv("PAPERCLIP_RECORD_CLI")
    check_recording(path, {"result": ["completed", "done"]}, "PAPERCLIP_RECORD_CLI")
    with pytest.raises(AssertionError):
        check_recording(path, {"result": ["failed", None]}, "PAPERCLIP_RECORD_CLI")
