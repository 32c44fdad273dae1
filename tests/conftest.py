"""Fixtures shared by the core's tests (the plugin-author fixtures are in ``paperclip.testing``)."""

from __future__ import annotations

import pytest

from tests.support import fixture_provider


@pytest.fixture
def fixture_kind(paperclip_register_plugin):
    """The ``fixture`` provider kind on the test's plugin host (before the app is built)."""
    paperclip_register_plugin(fixture_provider, name="fixture")
    return fixture_provider.NAME
