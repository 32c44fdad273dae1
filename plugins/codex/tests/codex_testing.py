"""Helpers for the Codex plugin tests: the fake's files, an event recorder, bounded waits."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import paperclip_codex
from paperclip_hookspecs.providers import DriverContext, McpEndpoint, ProviderEvent, TurnInput

TOKEN = "run-token-7f3a"
WAIT = 20.0
"""Upper bound for anything a test awaits; tests never sleep to synchronise."""
PLUGIN_ROOT = Path(paperclip_codex.__file__).resolve().parent.parent

T = TypeVar("T")


@dataclass
class ToolServer:
    """A streamable-HTTP MCP server that checks the bearer token and records calls."""

    url: str
    token: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[str | None] = field(default_factory=list)
    """The Authorization header of each refused HTTP request (None when absent)."""
    sessions: list[str | None] = field(default_factory=list)
    """The ``Mcp-Session-Id`` of each accepted HTTP request (None before one is assigned)."""

    def endpoint(self, token: str | None = None) -> McpEndpoint:
        return McpEndpoint(
            name="paperclip", url=self.url, bearer_token=self.token if token is None else token
        )


@dataclass
class FakeCodex:
    """Paths and helpers around one fake app-server script."""

    dir: Path

    @property
    def script_path(self) -> Path:
        return self.dir / "script.json"

    @property
    def log_path(self) -> Path:
        return self.dir / "fake.log"

    def script(self, script: Any) -> FakeCodex:
        self.script_path.write_text(json.dumps(script))
        return self

    def point(self, name: str) -> Path:
        """A file the test creates to let a script's ``wait_for_file`` step go on."""
        return self.dir / f"{name}.point"

    def pid(self) -> int:
        """The pid of the fake process started last."""
        return int(self.entries("started")[-1]["pid"])

    def command(self) -> tuple[str, ...]:
        """The runner's launch profile for the fake: the command a DriverContext carries."""
        return (
            sys.executable,
            "-m",
            "paperclip_codex_testing.fake_app_server",
            "--script",
            str(self.script_path),
            "--log",
            str(self.log_path),
        )

    def config(self, **extra: Any) -> dict[str, Any]:
        """The agent's provider config (it tunes the driver; the command is the runner's)."""
        return {"request_timeout_seconds": WAIT, "close_timeout_seconds": 5, **extra}

    def log(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def received(self, method: str) -> list[dict[str, Any]]:
        """Messages the fake received with this method, in order."""
        return [
            e["message"]
            for e in self.log()
            if e["type"] == "received" and e["message"].get("method") == method
        ]

    def entries(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.log() if e["type"] == kind]


def reach(name: str) -> dict[str, Any]:
    """A script step that tells the test, through the event stream, that it got here."""
    return {"notify": {"method": "test/point", "params": {"name": name}}}


def driver_context(state_dir: Path, command: tuple[str, ...] = ()) -> DriverContext:
    # The fake runs as `python -m paperclip_codex...`: make the package importable
    # there however these tests were launched.
    return DriverContext(
        state_dir=str(state_dir), env={"PYTHONPATH": str(PLUGIN_ROOT)}, command=command
    )


class Events:
    """An event sink that records what it is given and lets a test await an event."""

    def __init__(self) -> None:
        self.items: list[ProviderEvent] = []
        self._changed = asyncio.Condition()

    async def __call__(self, event: ProviderEvent) -> None:
        async with self._changed:
            self.items.append(event)
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[ProviderEvent], bool]) -> ProviderEvent:
        async with asyncio.timeout(WAIT), self._changed:
            while True:
                for event in self.items:
                    if predicate(event):
                        return event
                await self._changed.wait()

    async def reached(self, name: str) -> None:
        """Await the fake's ``{"notify": {"method": "test/point", "params": {"name": ...}}}`` step."""
        await self.wait_for(lambda e: e.type == "test/point" and e.payload.get("name") == name)

    def types(self) -> list[str]:
        return [e.type for e in self.items]

    def items_of(self, kind: str, method: str = "item/completed") -> list[dict[str, Any]]:
        """The ``item`` payloads of ``method`` events whose item type is ``kind``."""
        return [
            dict(e.payload["item"])
            for e in self.items
            if e.type == method and e.payload["item"]["type"] == kind
        ]


async def bounded(awaitable: Awaitable[T]) -> T:
    """Await with the tests' upper bound."""
    return await asyncio.wait_for(awaitable, WAIT)


def turn_input(
    fake: FakeCodex,
    cwd: Path,
    *,
    prompt: str = "Fix the failing test.",
    session_ref: str | None = None,
    tools: ToolServer | None = None,
    token: str | None = None,
    **config: object,
) -> TurnInput:
    return TurnInput(
        run_id="run-1",
        prompt=prompt,
        cwd=str(cwd),
        session_ref=session_ref,
        mcp=tools.endpoint(token) if tools is not None else None,
        config=fake.config(**config),
    )


def turn_events(events: Events) -> list[str]:
    """Event types without the status notifications around them."""
    noise = {"thread/status/changed", "mcpServer/startupStatus/updated"}
    return [t for t in events.types() if t not in noise]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def held_turn(
    driver: Any, fake: Any, events: Events, cwd: Path
) -> tuple[Path, asyncio.Task[Any]]:
    """A turn that has reached ``ready`` and is held until the file it returns is touched;
    the running turn."""
    go = fake.point("go")
    fake.script([reach("ready"), {"wait_for_file": str(go)}])
    running = asyncio.create_task(driver.run_turn(turn_input(fake, cwd), events))
    await events.reached("ready")
    return go, running
