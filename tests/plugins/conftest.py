"""Fake installed distributions, one site folder per test (see ``tests/plugins/fakes.py``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.plugins.fakes import FakeSite


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    site = FakeSite(tmp_path / "site")
    site.path.mkdir()
    monkeypatch.syspath_prepend(str(site.path))
    yield site
    for name in site.modules:
        sys.modules.pop(name, None)
