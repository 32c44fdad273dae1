"""Fixtures: a real MCP tool server, the fake gateway as a process, a driver whose profile reaches it."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from paperclip_gateway.driver import GatewayDriver
from paperclip_hookspecs.providers import DriverContext, ProviderEvent

try:  # mcp 2
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef, attr-defined, unused-ignore]

TOKEN = "run-token-1"
WAIT = 60.0
GATEWAY_TOKEN = "gateway-secret"
RELAY_TOKEN = "relay-secret"
PLUGIN_ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ToolServer:
    url: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[str | None] = field(default_factory=list)


@dataclass
class FakeGateway:
    port: int
    relay_port: int
    folder: Path
    process: subprocess.Popen[bytes] | None = None

    def script(self, agent: str, steps: Any) -> None:
        (self.folder / f"{agent}.json").write_text(json.dumps(steps))

    def profile(self) -> tuple[str, ...]:
        return (
            f"ws://127.0.0.1:{self.port}",
            "--token-env",
            "TEST_GATEWAY_TOKEN",
            "--tools-listen",
            f"127.0.0.1:{self.relay_port}",
            "--tools-token-env",
            "TEST_RELAY_TOKEN",
        )

    def log(self) -> list[dict[str, Any]]:
        path = self.folder / "fake.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Events:
    """The event sink of a turn; a test can wait until an event has arrived."""

    def __init__(self) -> None:
        self.items: list[ProviderEvent] = []
        self._arrived = asyncio.Event()

    async def __call__(self, event: ProviderEvent) -> None:
        self.items.append(event)
        self._arrived.set()

    def types(self) -> list[str]:
        return [e.type for e in self.items]

    async def wait_for(self, predicate: Any, limit: float = WAIT) -> None:
        async with asyncio.timeout(limit):
            while not predicate(self.items):
                self._arrived.clear()
                await self._arrived.wait()


@pytest.fixture
async def tool_server() -> AsyncIterator[ToolServer]:
    """The run's tools, `echo` and `finish`, behind the run's bearer token, on 127.0.0.1."""
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
def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGateway]:
    """The fake gateway as a process; its MCP server is the runner's relay."""
    monkeypatch.setenv("TEST_GATEWAY_TOKEN", GATEWAY_TOKEN)
    monkeypatch.setenv("TEST_RELAY_TOKEN", RELAY_TOKEN)
    folder = tmp_path / "gateway"
    folder.mkdir()
    fake = FakeGateway(port=free_port(), relay_port=free_port(), folder=folder)
    fake.process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paperclip_gateway.fake_gateway",
            "--port",
            str(fake.port),
            "--token-env",
            "TEST_GATEWAY_TOKEN",
            "--script-dir",
            str(folder),
            "--log",
            str(folder / "fake.log"),
            "--mcp-url",
            f"http://127.0.0.1:{fake.relay_port}/mcp",
            "--mcp-token-env",
            "TEST_RELAY_TOKEN",
        ],
        env={**__import__("os").environ, "PYTHONPATH": str(PLUGIN_ROOT)},
    )
    deadline = time.monotonic() + WAIT
    while not any(e["type"] == "started" for e in fake.log()):
        assert fake.process.poll() is None and time.monotonic() < deadline, (
            "the fake gateway did not start"
        )
        time.sleep(0.05)
    try:
        yield fake
    finally:
        fake.process.terminate()
        fake.process.wait(10)


@pytest.fixture
async def driver(tmp_path: Path, gateway: FakeGateway) -> AsyncIterator[GatewayDriver]:
    state = tmp_path / "state"
    state.mkdir()
    gw = GatewayDriver(DriverContext(state_dir=str(state), command=gateway.profile()))
    try:
        yield gw
    finally:
        await gw.close()


@pytest.fixture
def events() -> Events:
    return Events()
