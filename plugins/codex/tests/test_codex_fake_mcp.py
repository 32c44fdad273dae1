"""The fake app-server's MCP client against a real MCP server on loopback: one session for
the process, as Codex keeps its clients, and each timeout bounding what Codex bounds."""

from __future__ import annotations

from codex_testing import TOKEN, ToolServer
from paperclip_codex_testing.fake_tools import McpClient


def settings(server: ToolServer, **timeouts: float) -> dict[str, object]:
    return {
        "url": server.url,
        "http_headers": {"Authorization": f"Bearer {TOKEN}"},
        **timeouts,
    }


async def test_one_session_serves_the_listing_and_every_call(tool_server: ToolServer) -> None:
    client = McpClient(settings(tool_server))
    try:
        ok, tools = await client.list_tools()
        assert ok and isinstance(tools, dict) and "echo" in tools
        for text in ("one", "two", "three"):
            ok, result = await client.call("echo", {"text": text})
            assert ok, result
    finally:
        await client.close()

    assert [c["arguments"]["text"] for c in tool_server.calls] == ["one", "two", "three"]
    # The first request (initialize) has no session yet; every later one carries the same.
    assert tool_server.sessions[0] is None
    assert len(set(tool_server.sessions[1:])) == 1


async def test_the_startup_timeout_bounds_the_start_and_the_tool_timeout_the_call(
    tool_server: ToolServer,
) -> None:
    # Codex's startup_timeout_sec is for starting the server: a call may take longer.
    client = McpClient(settings(tool_server, startup_timeout_sec=1, tool_timeout_sec=2.5))
    try:
        ok, result = await client.call("slow", {"seconds": 1.5})
        assert ok, result
        assert isinstance(result, dict) and result["content"][0]["text"] == "slept"
        ok, error = await client.call("slow", {"seconds": 4})
        assert (ok, error) == (False, "MCP call to slow timed out after 2.5s")
    finally:
        await client.close()


async def test_a_server_that_is_not_there_is_an_error_text_not_an_exception() -> None:
    client = McpClient({"url": "http://127.0.0.1:9/mcp", "startup_timeout_sec": 2})
    try:
        ok, error = await client.call("echo", {"text": "x"})
    finally:
        await client.close()
    assert not ok and isinstance(error, str) and error
