"""What the provider plugins' tests share (extra ``testing``): a fake's script folder,
a turn's event sink, a driver on the fake and its turns, the run's tools on loopback. The
fixtures are in :mod:`paperclip_provider_kit.fixtures`; a fake against its real CLI, in
:mod:`paperclip_provider_kit.testing.conformance`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from paperclip_hookspecs.providers import (
    DriverContext,
    McpEndpoint,
    ProviderDriver,
    ProviderEvent,
    TurnInput,
    TurnResult,
)

from paperclip_provider_kit.usage import COUNTS

D = TypeVar("D", bound=ProviderDriver)

TOKEN = "run-token-1"
"""The bearer token the ``tool_server`` fixture accepts, as a run's token."""
WAIT = 60.0
"""How long a test waits for a process or an event before it fails."""


@dataclass
class ToolServer:
    """The run's tools on loopback: the calls they got, the requests refused for their token."""

    url: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[str | None] = field(default_factory=list)


@dataclass
class ScriptFolder:
    """The files of a scripted fake provider: a script per model (or agent), and its log."""

    folder: Path
    module: str
    """The fake's module, run as ``python -m <module> --script-dir <folder> --log <log>``."""

    def script(self, name: str, steps: Any) -> None:
        (self.folder / f"{name}.json").write_text(json.dumps(steps))

    def command(self) -> tuple[str, ...]:
        return (
            sys.executable,
            "-m",
            self.module,
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
    """The event sink of a turn; a test can wait until an event of a type has arrived."""

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


SCRIPTED_CONFIG = {
    "base_url": "http://127.0.0.1:9/v1",
    "model": "m1",
    "env_key": "SCRIPTED_MODEL_API_KEY",
}
"""A CLI provider's config for model ``m1``: the fake runs the script ``m1.json``."""


def scripted_turn(cwd: Path | str, tool_server: ToolServer | None, **extra: Any) -> TurnInput:
    """A turn of run ``run-1`` in ``cwd`` on :data:`SCRIPTED_CONFIG`, with the tool server's
    tools when given; ``extra`` replaces any field."""
    mcp = McpEndpoint("paperclip", tool_server.url, TOKEN) if tool_server else None
    fields: dict[str, Any] = {
        "run_id": "run-1",
        "prompt": "Fix the build",
        "cwd": str(cwd),
        "mcp": mcp,
        "config": SCRIPTED_CONFIG,
        "system": "Standing rules.",
    }
    return TurnInput(**{**fields, **extra})


def script_folder(tmp_path: Path, fake_module: str) -> ScriptFolder:
    """A fresh folder for the scripts and log of the fake ``python -m <fake_module>``."""
    folder = tmp_path / "fake"
    folder.mkdir()
    return ScriptFolder(folder, fake_module)


def fake_context(
    state_dir: Path, fake: ScriptFolder, plugin_root: Path, **fields: Any
) -> DriverContext:
    """A driver's context whose launch command is the fake (importable from
    ``plugin_root``); ``fields`` set more of it (``report_usage``, hook API 1.8)."""
    env = {"PYTHONPATH": str(plugin_root), "SCRIPTED_MODEL_API_KEY": "dummy"}
    context = DriverContext(state_dir=str(state_dir), env=env, command=fake.command())
    return dataclasses.replace(context, **fields)


@asynccontextmanager
async def driver_on_fake(
    make: Callable[[DriverContext], D],
    state_dir: Path,
    fake: ScriptFolder,
    plugin_root: Path,
    **fields: Any,
) -> AsyncIterator[D]:
    """A driver on :func:`fake_context` (``fields`` set more of it), closed at exit."""
    driver = make(fake_context(state_dir, fake, plugin_root, **fields))
    try:
        yield driver
    finally:
        await driver.close()


async def run_turn(
    driver: ProviderDriver, turn: TurnInput, events: Events | None = None
) -> TurnResult:
    """``turn`` through ``driver``, its events to ``events`` (a sink of its own without);
    fails after :data:`WAIT`."""
    sink = Events() if events is None else events
    return await asyncio.wait_for(driver.run_turn(turn, sink), WAIT)


@dataclass
class FakeDrivers:
    """A provider's drivers on its fake, made as a runner makes them: one for a run, or a new
    one for the next turn of a session (a runner started again)."""

    make: Callable[[DriverContext], ProviderDriver]
    state_dir: Path
    fake: ScriptFolder
    plugin_root: Path
    """Where the plugin's package is importable from (the fake's ``PYTHONPATH``)."""

    def driver(self, **fields: Any) -> AbstractAsyncContextManager[ProviderDriver]:
        """A driver (:func:`driver_on_fake`; ``fields`` set more of its context), closed at
        exit."""
        return driver_on_fake(self.make, self.state_dir, self.fake, self.plugin_root, **fields)

    async def turn(
        self, turn: TurnInput, events: Events | None = None, **fields: Any
    ) -> TurnResult:
        """One turn on a driver of its own, closed after it."""
        async with self.driver(**fields) as driver:
            return await run_turn(driver, turn, events)


class Reported(list[Any]):
    """``DriverContext.report_usage`` for a test: keeps what the driver reported."""

    async def __call__(self, usage: Any) -> None:
        self.append(usage)


def counts(usages: list[Any], keys: tuple[str, ...] = COUNTS) -> list[dict[str, int]]:
    """The token counts ``keys`` of reported usages (all of them by default)."""
    return [{key: getattr(u, key) for key in keys} for u in usages]


def usage_log(fake: ScriptFolder) -> list[dict[str, Any]]:
    """What the fake says it sent, response by response (the ``usage`` entries of its log)."""
    return [e for e in fake.log() if e["type"] == "usage"]


async def usage_across_a_resume(
    drivers: FakeDrivers, tools: ToolServer
) -> tuple[TurnResult, TurnResult, Reported, Reported]:
    """Two turns of one session (``First.``, then ``Second.``), each on a driver of its own,
    the second resuming the first's session: both results, and what each driver reported."""
    drivers.fake.script("m1", {"turns": [[{"message": "First."}], [{"message": "Second."}]]})
    first, second = Reported(), Reported()
    done = await drivers.turn(
        scripted_turn(drivers.state_dir, tools, system=""), report_usage=first
    )
    resumed = scripted_turn(drivers.state_dir, tools, session_ref=done.session_ref, system="")
    again = await drivers.turn(resumed, report_usage=second)
    assert (done.status, again.status) == ("completed", "completed"), (done.error, again.error)
    return done, again, first, second
