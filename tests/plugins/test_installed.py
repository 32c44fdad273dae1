"""Every distribution under plugins/ is found, with its version, when installed (tox env ``py311``)."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from paperclip.plugin_host import PluginStatus

pytestmark = pytest.mark.installed_plugins

ROOT = Path(__file__).resolve().parents[2]
TESTING = frozenset(p.parent.name for p in (ROOT / "plugins").glob("*-testing/pyproject.toml"))
"""The providers' fakes, each its provider's testing distribution: no plugin either."""
LIBRARIES = frozenset({"provider-kit", "recovery-kit"}) | TESTING
"""Distributions under plugins/ that plugins share or test with, registering no hooks themselves."""
PLUGIN_FOLDERS = sorted(
    p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml") if p.parent.name not in LIBRARIES
)


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_a_shared_library_under_plugins_is_no_plugin(name, paperclip_installed_plugin_host):
    project = tomllib.loads((ROOT / "plugins" / name / "pyproject.toml").read_text())["project"]
    assert "paperclip" not in project.get("entry-points", {})
    assert project["name"] not in {
        r.distribution for r in paperclip_installed_plugin_host.records()
    }


@pytest.mark.parametrize("folder", PLUGIN_FOLDERS, ids=lambda p: p.name)
def test_an_installed_plugin_folder_is_loaded_with_its_version(
    folder, paperclip_installed_plugin_host
):
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    [entry_point] = project["entry-points"]["paperclip"]
    [found] = [r for r in paperclip_installed_plugin_host.records() if r.name == entry_point]

    assert found.status is PluginStatus.LOADED, found.reason
    assert found.distribution == project["name"]
    assert found.version == version(project["name"])
    assert found.hooks
    paperclip_installed_plugin_host.check_pending()


def test_paperclip_providers_of_the_repository_are_separate_distributions(
    paperclip_installed_plugin_host,
):
    records = {r.name: r for r in paperclip_installed_plugin_host.records() if not r.builtin}
    kinds = {k.name for k in paperclip_installed_plugin_host.providers()}
    providers = ("codex", "opencode", "pi", "gateway")
    assert set(providers) <= kinds
    distributions = {records[name].distribution for name in providers}
    assert distributions == {f"paperclip-{name}" for name in providers}
    assert all(records[name].version for name in providers)
