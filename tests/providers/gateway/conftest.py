"""Fixtures of the gateway tests: a real OpenClaw gateway on loopback (or the fake), the scripted
model, and a stack whose runner's gateway profile reaches it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.engine.conftest import Stack
from tests.providers.gateway.cli import OPENCLAW
from tests.support.db import end_what_is_left
from tests.support.model_endpoint import ModelEndpoint
from tests.support.processes import free_port

GATEWAY_TOKEN_VARIABLE = "OPENCLAW_TEST_GATEWAY_TOKEN"
TOOLS_TOKEN_VARIABLE = "OPENCLAW_TEST_TOOLS_TOKEN"
START_LIMIT = 90.0
READY = "[gateway] ready"
"""OpenClaw's log line once it serves requests."""
OFFLINE_ENV = {
    "OPENCLAW_NO_AUTO_UPDATE": "1",
    "DO_NOT_TRACK": "1",
    "OPENCLAW_OFFLINE": "1",
    "OPENCLAW_SKIP_CRON": "1",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "gateway_cli: drives a real OpenClaw gateway (tox env gateway-cli installs it)"
    )


@dataclass
class Gateway:
    """A gateway on loopback, the runner's relay port it calls for tools, and their secrets."""

    port: int = field(default_factory=free_port)
    relay_port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    tools_token: str = field(default_factory=lambda: uuid.uuid4().hex)
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    def profile(self) -> list[str]:
        return [
            f"ws://127.0.0.1:{self.port}",
            "--token-env",
            GATEWAY_TOKEN_VARIABLE,
            "--tools-listen",
            f"127.0.0.1:{self.relay_port}",
            "--tools-token-env",
            TOOLS_TOKEN_VARIABLE,
        ]

    def runner_env(self) -> dict[str, str]:
        return {GATEWAY_TOKEN_VARIABLE: self.token, TOOLS_TOKEN_VARIABLE: self.tools_token}

    def tail(self) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:])

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        with _suppress():
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            # A gateway with a run going drains it for minutes before it exits: this is cleanup.
            self.process.wait(3)
        except subprocess.TimeoutExpired:
            with _suppress():
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], (ProcessLookupError, PermissionError))  # type: ignore[arg-type]


def openclaw_config(gateway: Gateway, endpoint_url: str, model: str) -> dict:
    """OpenClaw's config: the scripted model, our tools at the runner's relay, nothing else."""
    return {
        "models": {
            "providers": {
                "scripted": {
                    "baseUrl": endpoint_url,
                    "apiKey": "scripted-dummy-key",
                    "api": "openai-completions",
                    "models": [{"id": model, "name": model}],
                }
            }
        },
        # No heartbeat or scheduled turns: every model call is the run's.
        "agents": {
            "defaults": {"model": {"primary": f"scripted/{model}"}, "heartbeat": {"every": "0m"}}
        },
        "cron": {"enabled": False},
        "update": {"checkOnStart": False},
        "telemetry": {"enabled": False},
        "tools": {"toolSearch": False},
        "mcp": {
            "servers": {
                "paperclip": {
                    "url": f"http://127.0.0.1:{gateway.relay_port}/mcp",
                    "transport": "streamable-http",
                    "headers": {"Authorization": f"Bearer {gateway.tools_token}"},
                }
            }
        },
    }


def start_openclaw(
    tmp: Path, endpoint: ModelEndpoint, model: str, gateway: Gateway | None = None
) -> Gateway:
    """``openclaw gateway run`` on loopback with a home of its own; returns once it is ready.
    Given ``gateway`` (one killed), its next process: the same ports, secrets and home."""
    cli = OPENCLAW.require()
    gateway = gateway or Gateway()
    home = tmp / "openclaw-home"
    (home / ".openclaw").mkdir(parents=True, exist_ok=True)
    config = openclaw_config(gateway, endpoint.url, model)
    (home / ".openclaw" / "openclaw.json").write_text(json.dumps(config, indent=1))
    gateway.log_path = tmp / "openclaw.log"
    readies = _readies(gateway.log_path)  # a gateway started again appends to its log
    log = gateway.log_path.open("ab")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PAPERCLIP_")},
        **OPENCLAW.env(),
        **OFFLINE_ENV,
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
    }
    (home / "tmp").mkdir(exist_ok=True)
    gateway.process = subprocess.Popen(
        [
            str(cli),
            "gateway",
            "run",
            "--allow-unconfigured",
            "--bind",
            "loopback",
            "--port",
            str(gateway.port),
            "--auth",
            "token",
            "--token",
            gateway.token,
        ],
        cwd=home,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + START_LIMIT
    while _readies(gateway.log_path) == readies:
        if gateway.process.poll() is not None or time.monotonic() > deadline:
            tail = gateway.tail()
            gateway.stop()
            raise RuntimeError(f"the OpenClaw gateway did not start: {tail}")
        time.sleep(0.2)
    return gateway


def start_fake_gateway(tmp: Path, script_dir: Path, gateway: Gateway | None = None) -> Gateway:
    """The fake gateway, its tools at the runner's relay, as OpenClaw's would be. Given
    ``gateway`` (one killed), its next process: the same ports, secrets and log."""
    gateway = gateway or Gateway()
    gateway.log_path = tmp / "fake-gateway.log"
    started = _starts(gateway.log_path)
    env = {
        **os.environ,
        GATEWAY_TOKEN_VARIABLE: gateway.token,
        TOOLS_TOKEN_VARIABLE: gateway.tools_token,
    }
    gateway.process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paperclip_gateway_testing.fake_gateway",
            "--port",
            str(gateway.port),
            "--token-env",
            GATEWAY_TOKEN_VARIABLE,
            "--script-dir",
            str(script_dir),
            "--log",
            str(gateway.log_path),
            "--mcp-url",
            f"http://127.0.0.1:{gateway.relay_port}/mcp",
            "--mcp-token-env",
            TOOLS_TOKEN_VARIABLE,
        ],
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + START_LIMIT
    while _starts(gateway.log_path) == started:
        if gateway.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the fake gateway did not start")
        time.sleep(0.05)
    return gateway


def _readies(log: Path) -> int:
    """How many OpenClaw processes have said they are ready in this log."""
    return _plain(log.read_text(errors="replace")).count(READY) if log.exists() else 0


def _starts(log: Path) -> int:
    """How many fake gateway processes have started with this log."""
    return log.read_text().count('"started"') if log.exists() else 0


def _plain(text: str) -> str:
    """Without terminal colour codes."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.fixture
def stack(paperclip_database_url: str, tmp_path: Path) -> Iterator[Stack]:
    """tests/providers/conftest.py's, and the gateway it reaches stopped after it."""
    stack = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    yield stack
    stack.stop()
    gateway = getattr(stack, "gateway", None)
    if gateway is not None:
        gateway.stop()
    end_what_is_left(paperclip_database_url)  # the module's next test starts from nothing


@pytest.fixture
def gateway_stack(stack: Stack) -> Stack:
    return stack


def restart_runner(stack: Stack) -> None:
    """SIGKILL the runner (the gateway goes on) and start another with the same profile."""
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    gateway = stack.gateway  # type: ignore[attr-defined]
    stack.start_runner(launch={"gateway": {"default": gateway.profile()}}, env=gateway.runner_env())


def runner_said(stack: Stack, text: str) -> bool:
    """Whether the runner's log holds ``text`` (its lines are wrapped: spaces do not count)."""
    try:
        logged = stack.runner.log_path.read_text(errors="replace")
    except FileNotFoundError:
        return False
    return "".join(text.split()) in "".join(logged.split())


ALREADY_GOING = "is already going: asking for its end"
"""The driver's log line when the gateway answers a key it already has ``in_flight``."""


def start_stack(stack: Stack, gateway: Gateway, profile_name: str = "default") -> None:
    """A control plane, and a runner whose gateway profile reaches ``gateway``."""
    stack.gateway = gateway  # type: ignore[attr-defined]
    stack.start_server()
    stack.start_runner(
        launch={"gateway": {profile_name: gateway.profile()}}, env=gateway.runner_env()
    )
