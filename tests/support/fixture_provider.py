"""A provider plugin for tests: the ``fixture`` kind, with a config schema, launch profiles and a probe.

In-process tests register this module on their plugin host
(``register_plugin(fixture_provider, name="fixture")``); process tests install
it as a distribution (:func:`install`), so that ``paperclip serve``,
``paperclip runner`` and ``paperclip doctor`` find it by its entry point.

Its driver starts exactly the command the runner resolved
(``DriverContext.command``), and every profile it offers leaves a marker file
in ``$PAPERCLIP_FIXTURE_MARKERS`` when it runs: a test can tell whether any
process was started at all.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import (
    DriverContext,
    EventSink,
    ProviderCapabilities,
    ProviderKind,
    ProviderProbe,
    TurnInput,
    TurnResult,
)

NAME = "fixture"
MARKERS_ENV = "PAPERCLIP_FIXTURE_MARKERS"
CONFIG_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "model": {"type": "string", "maxLength": 100},
        "temperature": {"type": "number", "minimum": 0, "maximum": 2},
    },
    "additionalProperties": False,
}


def marker_command(name: str) -> tuple[str, ...]:
    """A command line that leaves ``<markers>/<name>`` and exits."""
    script = (
        "import os, pathlib; "
        f"pathlib.Path(os.environ[{MARKERS_ENV!r}], {name!r}).write_text(str(os.getpid()))"
    )
    return (sys.executable, "-c", script)


class MarkerDriver:
    """Runs the resolved command once per turn; the turn completes when it exits."""

    def __init__(self, context: DriverContext) -> None:
        self.context = context

    async def run_turn(self, turn: TurnInput, emit: EventSink) -> TurnResult:
        if not self.context.command:
            return TurnResult(status="failed", error="the runner resolved no command")
        proc = await asyncio.create_subprocess_exec(*self.context.command)
        code = await proc.wait()
        return TurnResult(status="completed" if code == 0 else "failed", error=None)

    async def steer(self, message_id: str, text: str) -> bool:
        return False

    async def interrupt(self) -> None:
        return None

    async def close(self) -> None:
        return None


def probe(command: Sequence[str]) -> ProviderProbe:
    """Found when the command's executable is; the version is the Python running it."""
    path = shutil.which(command[0]) if command else None
    if path is None:
        return ProviderProbe(found=False, hint=f"install {command[0] if command else 'it'}")
    return ProviderProbe(found=True, version=f"fixture {sys.version.split()[0]}", path=path)


@hookimpl
def paperclip_providers() -> list[ProviderKind]:
    return [
        ProviderKind(
            name=NAME,
            capabilities=ProviderCapabilities(),
            create_driver=MarkerDriver,
            description="test provider: runs a marker command",
            config_schema=CONFIG_SCHEMA,
            launch={"default": marker_command("default"), "second": marker_command("second")},
            probe=probe,
        )
    ]


def install(site: Path) -> dict[str, str]:
    """Install this module as the distribution ``paperclip-fixture`` in ``site``.

    Returns the environment a child process needs to find it.
    """
    site.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(__file__), site / "paperclip_fixture_provider.py")
    info = site / "paperclip_fixture-1.0.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: paperclip-fixture\nVersion: 1.0.0\n"
        "Requires-Dist: paperclip-hookspecs>=1.2,<2\n"
    )
    (info / "entry_points.txt").write_text("[paperclip]\nfixture = paperclip_fixture_provider\n")
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": f"{site}{os.pathsep}{path}" if path else str(site)}
