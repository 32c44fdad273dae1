"""Fixtures for the prompt tests: the plugin host answers the prompt hooks, as in the server.

``plugin_host`` (a fresh host with the built-in plugins) and ``register_plugin``
come from the test kit, ``paperclip.testing``.
"""

from __future__ import annotations

import pytest

from paperclip.plugin_host import PluginHost


@pytest.fixture
def hooks(paperclip_plugin_host: PluginHost) -> PluginHost:
    """The prompt hooks of this test: the test's plugin host."""
    return paperclip_plugin_host
