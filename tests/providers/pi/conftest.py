"""Fixtures of the Pi tests: the pinned CLI, the scripted model, a stack running both."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.conftest import Stack
from tests.providers.pi.cli import PI
from tests.support.model_endpoint import ModelEndpoint

MODEL_KEY_VARIABLE = "SCRIPTED_MODEL_API_KEY"
FAKE = [sys.executable, "-m", "paperclip_pi_testing.fake_pi"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "pi_cli: drives the real Pi CLI (tox env pi-cli installs it)"
    )


@pytest.fixture
def model_endpoint() -> Iterator[ModelEndpoint]:
    with ModelEndpoint() as endpoint:
        yield endpoint


@pytest.fixture
def pi_stack(paperclip_database_url: str, tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    yield stack
    stack.stop()


def start_real(stack: Stack) -> None:
    """A control plane, and a runner whose default pi profile is the pinned CLI."""
    cli = PI.require()
    stack.start_server()
    home = stack.tmp / "home"
    home.mkdir(exist_ok=True)
    stack.start_runner(
        launch={"pi": {"default": [str(cli)]}},
        # A dummy key, and a home of the test's own: nothing of the user's is read or written.
        env={MODEL_KEY_VARIABLE: "scripted-dummy-key", "HOME": str(home), **PI.env()},
    )


def start_fake(stack: Stack) -> None:
    """A control plane, and a runner offering the fake Pi as the pi profile ``fake``."""
    stack.start_server()
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    argv = [*FAKE, "--script-dir", str(stack.script_dir), "--log", str(stack.fake_log)]
    stack.start_runner(launch={"pi": {"fake": argv}})


def real_config(endpoint: ModelEndpoint, model: str, **extra: object) -> dict[str, object]:
    return {"base_url": endpoint.url, "model": model, "env_key": MODEL_KEY_VARIABLE, **extra}
