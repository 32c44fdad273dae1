"""The client commands against a real server: ``paperclip serve`` with its local runner on the
fake Codex, and ``paperclip`` itself run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.engine.conftest import FAKE_PROFILE, Stack


@dataclass
class Served:
    """A running server, and ``paperclip`` pointed at it."""

    stack: Stack
    url: str

    def cli(
        self, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``paperclip ARGS`` with PAPERCLIP_URL and PAPERCLIP_DATA_DIR set to the server's (and
        nothing else of ours): it reads the operator token there, as on the server's machine."""
        clean = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCLIP_")}
        return subprocess.run(
            [sys.executable, "-m", "paperclip", *args],
            env={**clean, **self.client_env, **(env or {})},
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )

    @property
    def client_env(self) -> dict[str, str]:
        """``PAPERCLIP_URL`` and ``PAPERCLIP_DATA_DIR`` of the server: where a command reads the
        operator token (tests/support/processes.py)."""
        return self.stack.servers[0].client_env

    def ok(self, *args: str, **options) -> str:
        result = self.cli(*args, **options)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        return result.stdout

    def json(self, *args: str, **options):
        return json.loads(self.ok(*args, "--json", **options))

    def script(self, steps: list[dict]) -> str:
        """A fake Codex script; an agent whose ``model`` is the returned name plays it."""
        model = f"scripted-{uuid.uuid4().hex[:8]}"
        self.stack.script_dir.mkdir(parents=True, exist_ok=True)
        (self.stack.script_dir / f"{model}.json").write_text(json.dumps(steps))
        return model

    def fake_config(self, steps: list[dict]) -> str:
        return json.dumps({"launch": FAKE_PROFILE, "model": self.script(steps)})


@pytest.fixture(scope="module")
def served(paperclip_database_url: str, tmp_path_factory) -> Iterator[Served]:
    """One server for the module, its local runner offering the fake Codex."""
    stack = Stack(database_url=paperclip_database_url, tmp=Path(tmp_path_factory.mktemp("cli")))
    try:
        stack.start_server(local_runner=True)
        yield Served(stack, stack.url())
    finally:
        stack.stop()
