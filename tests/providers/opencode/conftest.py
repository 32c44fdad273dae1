"""Fixtures of the OpenCode tests: the pinned CLI, the scripted model, a stack running both."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.conftest import Stack
from tests.providers.opencode.cli import OPENCODE
from tests.support.model_endpoint import ModelEndpoint

MODEL_KEY_VARIABLE = "SCRIPTED_MODEL_API_KEY"
FAKE = [sys.executable, "-m", "paperclip_opencode_testing.fake_server"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "opencode_cli: drives the real OpenCode CLI (tox env opencode-cli installs it)"
    )


@pytest.fixture
def model_endpoint() -> Iterator[ModelEndpoint]:
    with ModelEndpoint() as endpoint:
        yield endpoint


@pytest.fixture
def opencode_stack(paperclip_database_url: str, tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    yield stack
    stack.stop()


def start_real(stack: Stack) -> None:
    """A control plane, and a runner whose default opencode profile is the pinned CLI."""
    cli = OPENCODE.require()
    stack.start_server()
    home = stack.tmp / "home"
    home.mkdir(exist_ok=True)
    stack.start_runner(
        launch={"opencode": {"default": [str(cli), "serve"]}},
        # A dummy key, and a home of the test's own: nothing of the user's is read or written.
        env={MODEL_KEY_VARIABLE: "scripted-dummy-key", "HOME": str(home), **OPENCODE.env()},
    )


def start_fake(stack: Stack) -> None:
    """A control plane, and a runner offering the fake server as the opencode profile ``fake``."""
    stack.start_server()
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    argv = [*FAKE, "--script-dir", str(stack.script_dir), "--log", str(stack.fake_log)]
    stack.start_runner(launch={"opencode": {"fake": argv}})


def real_config(endpoint: ModelEndpoint, model: str, **extra: object) -> dict[str, object]:
    return {"base_url": endpoint.url, "model": model, "env_key": MODEL_KEY_VARIABLE, **extra}
