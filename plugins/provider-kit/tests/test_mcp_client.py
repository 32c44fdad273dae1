"""The kit's MCP client against a real MCP server on loopback (the ``tool_server`` fixture)."""

from __future__ import annotations

import pytest
from paperclip_provider_kit.mcp_client import call_tool, headers_of, list_tools
from paperclip_provider_kit.testing import TOKEN, ToolServer


def server(tools: ToolServer, token: str = TOKEN) -> dict[str, object]:
    return {"url": tools.url, "headers": {"Authorization": f"Bearer {token}"}}


def test_headers_take_environment_references(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUN_TOKEN", "secret")
    config = {"headers": {"Authorization": "Bearer {env:RUN_TOKEN}", "X-Missing": "{env:NOPE}"}}
    assert headers_of(config) == {"Authorization": "Bearer secret", "X-Missing": ""}
    assert headers_of({}) == {}


async def test_lists_and_calls_the_tools(tool_server: ToolServer) -> None:
    assert sorted(await list_tools(server(tool_server))) == ["echo", "finish"]
    ok, text = await call_tool(server(tool_server), "echo", {"text": "hi"})
    assert (ok, text) == (True, "echo: hi")
    assert tool_server.calls == [{"name": "echo", "arguments": {"text": "hi"}}]


async def test_a_tool_error_is_an_answer_not_an_exception(tool_server: ToolServer) -> None:
    ok, text = await call_tool(server(tool_server), "echo", {})  # missing argument
    assert not ok and "text" in text
    assert tool_server.calls == []


async def test_a_refused_token_is_an_error_text(tool_server: ToolServer) -> None:
    ok, text = await call_tool(server(tool_server, "wrong"), "echo", {"text": "hi"})
    assert not ok and text
    assert tool_server.rejected == ["Bearer wrong"] * len(tool_server.rejected)
    assert tool_server.rejected and tool_server.calls == []


async def test_only_remote_servers(tool_server: ToolServer) -> None:
    ok, text = await call_tool({"command": ["some-mcp-server"]}, "echo", {"text": "hi"})
    assert not ok and "remote" in text
