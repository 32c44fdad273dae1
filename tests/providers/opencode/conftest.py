"""The OpenCode tests' marker; their fixtures are tests/providers/conftest.py's."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "opencode_cli: drives the real OpenCode CLI (tox env opencode-cli installs it)"
    )
