"""Fixtures of the real-CLI tests: the pinned Codex CLI, the scripted model, a stack running both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.conftest import Stack
from tests.providers.codex.cli import require_cli
from tests.support.model_endpoint import ModelEndpoint

MODEL_KEY_VARIABLE = "SCRIPTED_MODEL_API_KEY"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "codex_cli: drives the real Codex CLI (tox env codex-cli installs it)"
    )


@pytest.fixture
def codex_cli() -> Path:
    """The pinned real CLI's launcher; skips (or fails under tox -e codex-cli) without it."""
    return require_cli()


@pytest.fixture
def real_stack(paperclip_database_url: str, tmp_path: Path, codex_cli: Path) -> Iterator[Stack]:
    """A control plane and a runner whose default codex profile is the real CLI."""
    stack = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    stack.codex_cli = codex_cli  # type: ignore[attr-defined]
    yield stack
    stack.stop()


def start_real(stack: Stack) -> None:
    """Start the control plane and a runner that launches the real ``codex app-server``."""
    stack.start_server()
    home = stack.tmp / "home"
    home.mkdir(exist_ok=True)
    stack.start_runner(
        launch={"codex": {"default": [str(stack.codex_cli), "app-server"]}},  # type: ignore[attr-defined]
        # A dummy key, and a home of the test's own: nothing of the user's is read or written.
        env={MODEL_KEY_VARIABLE: "scripted-dummy-key", "HOME": str(home)},
    )


def real_agent_config(endpoint: ModelEndpoint, model: str, **extra: object) -> dict[str, object]:
    """A new agent's provider config: only a model endpoint, and no retries (deterministic)."""
    return {
        "base_url": endpoint.url,
        "model": model,
        "env_key": MODEL_KEY_VARIABLE,
        "config_overrides": {
            "model_providers.paperclip.request_max_retries": 0,
            "model_providers.paperclip.stream_max_retries": 0,
        },
        **extra,
    }
