"""Pytest fixtures the provider plugins' tests share (extra ``testing``).

A plugin's test suite asks for them in its top ``conftest.py``::

    pytest_plugins = ["paperclip_provider_kit.fixtures"]

They are not registered through an entry point, so their names never reach
a test suite that did not ask for them.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from paperclip_provider_kit.testing import TOKEN, WAIT, Events, ToolServer

try:  # mcp 2
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef, attr-defined, unused-ignore]


@pytest.fixture
async def tool_server() -> AsyncIterator[ToolServer]:
    """The run's tools, ``echo`` and ``finish``, behind the bearer token ``TOKEN``, on 127.0.0.1."""
    mcp = MCPServer("paperclip-test-tools")
    holder: list[ToolServer] = []

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        holder[0].calls.append({"name": "echo", "arguments": {"text": text}})
        return f"echo: {text}"

    @mcp.tool()
    def finish(outcome: str, summary: str) -> dict[str, Any]:
        """Report the work done."""
        holder[0].calls.append({"name": "finish", "arguments": {"outcome": outcome}})
        return {"accepted": True}

    inner = mcp.streamable_http_app()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"authorization")
            if header != f"Bearer {TOKEN}".encode():
                holder[0].rejected.append(header.decode() if header is not None else None)
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
        await inner(scope, receive, send)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    holder.append(ToolServer(url=f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"))
    try:
        yield holder[0]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, WAIT)
        sock.close()


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """The driver's state folder."""
    path = tmp_path / "state"
    path.mkdir()
    return path
