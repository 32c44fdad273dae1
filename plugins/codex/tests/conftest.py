"""Fixtures: a real MCP tool server on loopback, the fake app-server's files, a driver."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from codex_testing import TOKEN, WAIT, Events, FakeCodex, ToolServer, driver_context
from paperclip_codex.driver import CodexDriver

try:  # mcp 2
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef, attr-defined, unused-ignore]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef, attr-defined, unused-ignore]


@pytest.fixture
async def tool_server() -> AsyncIterator[ToolServer]:
    """The run's tools: `echo`, `add`, `slow`, the paged `pages`, `correct` and `refuse`,
    behind a bearer token, on 127.0.0.1."""
    mcp = MCPServer("paperclip-test-tools")
    holder: list[ToolServer] = []

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        holder[0].calls.append({"name": "echo", "arguments": {"text": text}})
        return f"echo: {text}"

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        holder[0].calls.append({"name": "add", "arguments": {"a": a, "b": b}})
        return a + b

    @mcp.tool()
    def pages(cursor: str | None = None) -> dict[str, Any]:
        """Three cursor-paged pages: each names the cursor of the next."""
        holder[0].calls.append({"name": "pages", "arguments": {"cursor": cursor}})
        page = int(cursor[1:]) if cursor else 1
        return {"page": page, "next_cursor": f"p{page + 1}" if page < 3 else None}

    @mcp.tool()
    async def slow(seconds: float) -> str:
        """Answer after ``seconds``."""
        holder[0].calls.append({"name": "slow", "arguments": {"seconds": seconds}})
        await asyncio.sleep(seconds)
        return "slept"

    @mcp.tool()
    def correct() -> dict[str, Any]:
        """A refusal whose correction says where to continue."""
        holder[0].calls.append({"name": "correct", "arguments": {}})
        return {"error": {"code": "read_first", "correction": {"cursor": "p2"}}}

    @mcp.tool()
    def refuse() -> str:
        """Always refused: the server answers a result with ``isError``."""
        holder[0].calls.append({"name": "refuse", "arguments": {}})
        raise ToolError("not now: report again later")

    inner = mcp.streamable_http_app()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"authorization")
            if header != f"Bearer {TOKEN}".encode():
                holder[0].rejected.append(header.decode() if header is not None else None)
                start = {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"application/json")],
                }
                await send(start)
                await send({"type": "http.response.body", "body": b'{"error":"invalid_token"}'})
                return
            session = dict(scope["headers"]).get(b"mcp-session-id")
            holder[0].sessions.append(session.decode() if session is not None else None)
        await inner(scope, receive, send)

    # Our own listening socket: the port is known at once, and a client that
    # connects before uvicorn has started waits in the backlog.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    holder.append(ToolServer(url=f"http://127.0.0.1:{port}/mcp", token=TOKEN))
    try:
        yield holder[0]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, WAIT)
        sock.close()


@pytest.fixture
def fake(tmp_path: Path) -> FakeCodex:
    directory = tmp_path / "fake"
    directory.mkdir()
    return FakeCodex(directory)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


@pytest.fixture
async def driver(state_dir: Path, fake: FakeCodex) -> AsyncIterator[CodexDriver]:
    codex = CodexDriver(driver_context(state_dir, fake.command()))
    try:
        yield codex
    finally:
        await codex.close()


@pytest.fixture
def events() -> Events:
    return Events()
