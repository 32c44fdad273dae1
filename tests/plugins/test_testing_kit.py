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
def paperclip_plugin_host():
    # Shared by the module, so a plugin left registered would leak into the next test.
    from paperclip.plugin_host import PluginHost

    return PluginHost.with_builtins()
"""

TESTS = """
import types

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind


@hookimpl
def paperclip_providers():
    return [ProviderKind("kit", ProviderCapabilities(), create_driver=lambda ctx: None)]


def test_register(paperclip_plugin_host, paperclip_register_plugin):
    plugin = types.SimpleNamespace(paperclip_providers=paperclip_providers)
    record = paperclip_register_plugin(plugin, "kit")
    assert record.status == "loaded"
    assert [k.name for k in paperclip_plugin_host.providers()] == ["kit"]


def test_unregistered_at_teardown(paperclip_plugin_host):
    assert paperclip_plugin_host.providers() == []
    assert "kit" not in [r.name for r in paperclip_plugin_host.records()]


def test_bare_host_has_no_plugin(paperclip_bare_plugin_host):
    assert paperclip_bare_plugin_host.records() == ()


def test_installed_host_has_the_builtins(paperclip_installed_plugin_host):
    names = {r.name for r in paperclip_installed_plugin_host.records()}
    assert {"prompts", "presentation"} <= names
"""

OLD_NAMES = """
def test_the_names_before_0_2_still_work(plugin_host, bare_plugin_host, register_plugin):
    assert bare_plugin_host.records() == ()
    assert {"prompts", "presentation"} <= {r.name for r in plugin_host.records()}
"""


def run_pytest(folder):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        cwd=folder,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_old_fixture_names_work_with_a_deprecation_warning(tmp_path):
    (tmp_path / "test_old.py").write_text(textwrap.dedent(OLD_NAMES))
    result = run_pytest(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    for old, new in [
        ("plugin_host", "paperclip_plugin_host"),
        ("bare_plugin_host", "paperclip_bare_plugin_host"),
        ("register_plugin", "paperclip_register_plugin"),
    ]:
        assert f"PaperclipDeprecationWarning: the fixture '{old}' is deprecated" in result.stdout
        assert f"use '{new}'" in result.stdout


def test_the_fixtures_are_registered_through_pytest11(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_kit.py").write_text(textwrap.dedent(TESTS))
    result = run_pytest(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout


LATE_LAUNCH = """
import pytest


def test_launch_profiles_are_set_before_the_first_run(paperclip_provider_run):
    paperclip_provider_run.runner_env["SOME_KEY"] = "1"
    with pytest.raises(AssertionError, match="unknown_provider"):
        paperclip_provider_run("no-such-kind")  # the processes start, then the agent is refused
    paperclip_provider_run.launch = {"codex": {"late": ["codex", "app-server"]}}
    with pytest.raises(RuntimeError, match="set them before it"):
        paperclip_provider_run("no-such-kind")


def test_each_test_has_its_own_runner_environment(paperclip_provider_run):
    assert paperclip_provider_run.runner_env == {} and paperclip_provider_run.launch is None
"""


def test_provider_run_settings_are_per_test_and_read_at_the_first_run(tmp_path):
    (tmp_path / "test_late.py").write_text(textwrap.dedent(LATE_LAUNCH))
    result = run_pytest(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
