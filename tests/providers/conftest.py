"""Fixtures of every provider's tests: a stack (control plane and runner, started by the test)
and the scripted model endpoint. A provider's conftest may override ``stack`` (to stop what
else it started)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.conftest import Stack
from tests.support.db import end_what_is_left
from tests.support.model_endpoint import ModelEndpoint


@pytest.fixture
def model_endpoint() -> Iterator[ModelEndpoint]:
    with ModelEndpoint() as endpoint:
        yield endpoint


@pytest.fixture
def stack(paperclip_database_url: str, tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    yield stack
    stack.stop()
    end_what_is_left(paperclip_database_url)  # the module's next test starts from nothing
