"""The Pi tests' marker; their fixtures are tests/providers/conftest.py's."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "pi_cli: drives the real Pi CLI (tox env pi-cli installs it)"
    )
