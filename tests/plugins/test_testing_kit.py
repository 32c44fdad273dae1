"""The ``paperclip.testing`` fixtures as a plugin author gets them: a separate pytest run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.process

CONFTEST = """
import pytest


@pytest.fixture(scope="module")
def plugin_host():
    # Shared by the module, so a plugin left registered would leak into the next test.
    from paperclip.plugins import PluginHost

    return PluginHost.with_builtins()
"""

TESTS = """
import types

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind


@hookimpl
def paperclip_providers():
    return [ProviderKind("kit", ProviderCapabilities(), create_driver=lambda ctx: None)]


def test_register(plugin_host, register_plugin):
    record = register_plugin(types.SimpleNamespace(paperclip_providers=paperclip_providers), "kit")
    assert record.status == "loaded"
    assert [k.name for k in plugin_host.providers()] == ["kit"]


def test_unregistered_at_teardown(plugin_host):
    assert plugin_host.providers() == []
    assert "kit" not in [r.name for r in plugin_host.records()]


def test_bare_host_has_no_plugin(bare_plugin_host):
    assert bare_plugin_host.records() == ()


def test_installed_host_has_the_builtins(installed_plugin_host):
    assert {"prompts", "presentation"} <= {r.name for r in installed_plugin_host.records()}
"""


def test_the_fixtures_are_registered_through_pytest11(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_kit.py").write_text(textwrap.dedent(TESTS))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout
