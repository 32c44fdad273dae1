"""Fixtures: a real MCP tool server on loopback, the fake Pi's scripts, a driver."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from paperclip_hookspecs.providers import DriverContext, ProviderEvent
from paperclip_pi.driver import PiDriver

try:  # mcp 2
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef, attr-defined, unused-ignore]

TOKEN = "run-token-1"
WAIT = 60.0
PLUGIN_ROOT = Path(__file__).resolve().parents[1]


@dataclass
class ToolServer:
    url: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[str | None] = field(default_factory=list)


@dataclass
class Fake:
    """The fake Pi's files: a script per model, and its log."""

    folder: Path

    def script(self, model: str, steps: Any) -> None:
        (self.folder / f"{model}.json").write_text(json.dumps(steps))

    def command(self) -> tuple[str, ...]:
        return (
            sys.executable,
            "-m",
            "paperclip_pi.fake_pi",
            "--script-dir",
            str(self.folder),
            "--log",
            str(self.log_path),
        )

    @property
    def log_path(self) -> Path:
        return self.folder / "fake.log"

    def log(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]


class Events:
    """The event sink of a turn; a test can wait until an event has arrived."""

    def __init__(self) -> None:
        self.items: list[ProviderEvent] = []
        self._arrived = asyncio.Event()

    async def __call__(self, event: ProviderEvent) -> None:
        self.items.append(event)
        self._arrived.set()

    async def wait_for(self, kind: str, limit: float = WAIT) -> None:
        async with asyncio.timeout(limit):
            while kind not in self.types():
                self._arrived.clear()
                await self._arrived.wait()

    def types(self) -> list[str]:
        return [e.type for e in self.items]


@pytest.fixture
async def tool_server() -> AsyncIterator[ToolServer]:
    """The run's tools, `echo` and `finish`, behind a bearer token, on 127.0.0.1."""
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
def fake(tmp_path: Path) -> Fake:
    folder = tmp_path / "fake"
    folder.mkdir()
    return Fake(folder)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


@pytest.fixture
async def driver(state_dir: Path, fake: Fake) -> AsyncIterator[PiDriver]:
    env = {"PYTHONPATH": str(PLUGIN_ROOT), "SCRIPTED_MODEL_API_KEY": "dummy"}
    pi = PiDriver(DriverContext(state_dir=str(state_dir), env=env, command=fake.command()))
    try:
        yield pi
    finally:
        await pi.close()


@pytest.fixture
def events() -> Events:
    return Events()
