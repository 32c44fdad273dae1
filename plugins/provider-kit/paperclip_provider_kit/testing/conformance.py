"""A fake against its real CLI, at the protocol level: one scenario, one recording.

The conformance scenario (a tool that answers, a tool that fails, a closing
message) runs through a provider's real driver twice: against its fake, and
against the pinned real CLI with a scripted model. The provider reduces each
turn to what its driver and the engine read; both must equal the recording of
the real CLI (made with ``<variable>=1``, see :func:`check_recording`). A fake
that stops agreeing with the real CLI, or a CLI version that changes a shape,
fails there.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import uvicorn
from paperclip_hookspecs.providers import McpEndpoint, ProviderDriver, ProviderEvent, TurnInput

try:  # mcp 2
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef, attr-defined, unused-ignore]

CONFORMANCE_WAIT = 90.0
"""How long the scenario's turn (a real CLI's, starting cold) may take."""

CONFORMANCE_SCRIPT: list[dict[str, Any]] = [
    {"call_tool": {"name": "lookup", "arguments": {"key": "a"}}},
    {"call_tool": {"name": "broken", "arguments": {}}},
    {"message": "done"},
]
"""The scenario as a fake's script (``conformance.json``); a scripted model says the same
through the CLI: ``lookup`` with ``{"key": "a"}``, ``broken``, then ``done``."""

CONFORMANCE_MODEL = "conformance"
"""The model (and the fake's script, and the gateway's agent) of the scenario."""


@asynccontextmanager
async def conformance_tools() -> AsyncIterator[str]:
    """Two tools on 127.0.0.1 (any token): ``lookup`` answers, ``broken`` fails (a refusal the
    model sees). Yields their MCP URL."""
    mcp = MCPServer("conformance-tools")

    @mcp.tool()
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    @mcp.tool()
    def broken() -> str:
        """Always fails."""
        raise ValueError("broken on purpose")

    async with serve_tools(mcp) as url:
        yield url


@asynccontextmanager
async def serve_tools(mcp: Any) -> AsyncIterator[str]:
    """An MCP server's tools (streamable HTTP, no token) on 127.0.0.1; yields their URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(mcp.streamable_http_app(), log_level="warning"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, CONFORMANCE_WAIT)
        sock.close()


async def run_conformance_turn(
    driver: ProviderDriver, tools_url: str, cwd: Path, config: dict[str, Any], **fields: Any
) -> tuple[Any, list[ProviderEvent]]:
    """The scenario's one turn through ``driver`` (closed after it), with the tools at
    ``tools_url``; ``fields`` replace any of the turn's. Returns its result and events."""
    events: list[ProviderEvent] = []

    async def emit(event: ProviderEvent) -> None:
        events.append(event)

    turn: dict[str, Any] = {
        "run_id": "conformance",
        "prompt": "Run the conformance scenario.",
        "cwd": str(cwd),
        "mcp": McpEndpoint("paperclip", tools_url, "unused"),
        "config": config,
        "system": "Standing rules.",
    }
    try:
        result = await asyncio.wait_for(
            driver.run_turn(TurnInput(**{**turn, **fields}), emit), CONFORMANCE_WAIT
        )
    finally:
        await driver.close()
    return result, events


def check_recording(path: Path, reduced: dict[str, Any], variable: str) -> None:
    """Record the real CLI's reduced turn (where ``<variable>=1``), or compare it with the
    recording."""
    if os.environ.get(variable) == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(reduced, indent=1) + "\n")
    assert reduced == recorded(path)


def recorded(path: Path) -> dict[str, Any]:
    """The recording of the real CLI's reduced turn."""
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded
