"""The fake's ``page_tool`` step: a model following a paged tool's cursors, through the driver."""

from __future__ import annotations

from pathlib import Path

import pytest
from codex_testing import Events, FakeCodex, ToolServer, bounded
from paperclip_codex.driver import CodexDriver
from paperclip_codex_testing.fake_script import ScriptError, load_script
from paperclip_hookspecs.providers import TurnInput

pytestmark = pytest.mark.process


def turn_input(fake: FakeCodex, cwd: Path, tools: ToolServer) -> TurnInput:
    return TurnInput(
        run_id="run-1",
        prompt="Read every page.",
        cwd=str(cwd),
        session_ref=None,
        mcp=tools.endpoint(),
        config=fake.config(),
    )


async def test_page_tool_follows_next_cursor_to_the_last_page(
    driver: CodexDriver, fake: FakeCodex, tool_server: ToolServer, events: Events, tmp_path: Path
) -> None:
    fake.script([{"page_tool": {"name": "pages"}}, {"message": "Read them all."}])
    result = await bounded(driver.run_turn(turn_input(fake, tmp_path, tool_server), events))

    assert result.status == "completed", result.error
    assert tool_server.calls == [
        {"name": "pages", "arguments": {"cursor": None}},
        {"name": "pages", "arguments": {"cursor": "p2"}},
        {"name": "pages", "arguments": {"cursor": "p3"}},
    ]
    # One tool-call item per page, as Codex shows a model's repeated calls.
    calls = events.items_of("mcpToolCall")
    assert [(c["tool"], c["arguments"], c["status"]) for c in calls] == [
        ("pages", {}, "completed"),
        ("pages", {"cursor": "p2"}, "completed"),
        ("pages", {"cursor": "p3"}, "completed"),
    ]


async def test_page_tool_starts_where_the_previous_result_says(
    driver: CodexDriver, fake: FakeCodex, tool_server: ToolServer, events: Events, tmp_path: Path
) -> None:
    fake.script(
        [
            {"call_tool": {"name": "correct", "arguments": {}}},
            {"page_tool": {"name": "pages", "start_cursor": "error.correction.cursor"}},
        ]
    )
    result = await bounded(driver.run_turn(turn_input(fake, tmp_path, tool_server), events))

    assert result.status == "completed", result.error
    assert [c["arguments"] for c in tool_server.calls] == [{}, {"cursor": "p2"}, {"cursor": "p3"}]


async def test_page_tool_bounds_its_pages(
    driver: CodexDriver, fake: FakeCodex, tool_server: ToolServer, events: Events, tmp_path: Path
) -> None:
    fake.script([{"page_tool": {"name": "pages", "max_pages": 2}}])
    result = await bounded(driver.run_turn(turn_input(fake, tmp_path, tool_server), events))

    assert result.status == "failed"
    assert "more than 2 pages" in (result.error or "")
    assert len(tool_server.calls) == 2


def test_page_tool_needs_a_name(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('[{"page_tool": {"arguments": {}}}]')
    with pytest.raises(ScriptError, match="page_tool needs an object"):
        load_script(path)
