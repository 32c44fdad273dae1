"""Fixtures: a real MCP tool server, the fake gateway as a process, a driver whose profile reaches it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from paperclip_gateway.driver import GatewayDriver
from paperclip_hookspecs.providers import DriverContext
from paperclip_provider_kit.testing import WAIT

GATEWAY_TOKEN = "gateway-secret"
RELAY_TOKEN = "relay-secret"
# The kit's fixtures: tool_server, events, state_dir.
pytest_plugins = ["paperclip_provider_kit.fixtures"]

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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

    def script_a_follow_up(self, agent: str, go: Path) -> None:
        """A first turn held until ``go`` exists (``First.``), then a follow-up's
        (``Follow-up.``)."""
        first = [{"wait_for_file": str(go), "timeout": 30}, {"message": "First."}]
        self.script(agent, {"turns": [first, [{"message": "Follow-up."}]]})

    def log(self) -> list[dict[str, Any]]:
        path = self.folder / "fake.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


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
            "paperclip_gateway_testing.fake_gateway",
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
        env={**os.environ, "PYTHONPATH": str(PLUGIN_ROOT)},
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
async def driver(state_dir: Path, gateway: FakeGateway) -> AsyncIterator[GatewayDriver]:
    gw = GatewayDriver(DriverContext(state_dir=str(state_dir), command=gateway.profile()))
    try:
        yield gw
    finally:
        await gw.close()
