"""What every conformance test shares: the run's tools on loopback, and recordings.

A conformance scenario runs a provider's real driver twice: against its fake,
and against the pinned real CLI with the scripted model. Both are reduced to
what the driver and the engine read, and compared with the recording of the
real CLI in the provider's ``data/`` folder (made with
``PAPERCLIP_RECORD_<NAME>=1``). A fake that stops agreeing with the real CLI,
or a CLI version that changes a shape, fails there.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn

try:  # mcp 2
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef]

from contextlib import asynccontextmanager

WAIT = 90.0


@asynccontextmanager
async def tool_server() -> AsyncIterator[str]:
    """Two tools on 127.0.0.1: ``lookup`` answers, ``broken`` fails (a refusal the model sees)."""
    mcp = MCPServer("conformance-tools")

    @mcp.tool()
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    @mcp.tool()
    def broken() -> str:
        """Always fails."""
        raise ValueError("broken on purpose")

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(mcp.streamable_http_app(), log_level="warning"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, WAIT)
        sock.close()


def check_recording(path: Path, reduced: dict[str, Any], variable: str) -> None:
    """Record (``<variable>=1``) or compare with the recording."""
    if os.environ.get(variable) == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(reduced, indent=1) + "\n")
    assert reduced == json.loads(path.read_text())


def recorded(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())
