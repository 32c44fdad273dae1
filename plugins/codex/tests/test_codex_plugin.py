"""The plugin's registration through pluggy, as the host performs it."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import paperclip_codex.plugin
import paperclip_hookspecs.providers
import pluggy
import pytest
from codex_testing import driver_context
from paperclip_codex.driver import CodexDriver
from paperclip_codex.probe import probe
from paperclip_codex.schema import CONFIG_SCHEMA
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind


def test_paperclip_providers_registers_the_codex_kind(tmp_path: Path) -> None:
    pm = pluggy.PluginManager("paperclip")
    pm.add_hookspecs(paperclip_hookspecs.providers)
    pm.register(paperclip_codex.plugin, name="codex")

    kinds = [kind for result in pm.hook.paperclip_providers() for kind in result]

    assert len(kinds) == 1
    (kind,) = kinds
    assert isinstance(kind, ProviderKind)
    assert kind.name == "codex"
    assert kind.capabilities == ProviderCapabilities(
        steer=True, resume=True, mcp_tools=True, fresh_retry=True, system_prompt=True
    )
    assert kind.description
    assert kind.launch == {"default": ("codex", "app-server")}
    assert kind.config_schema is CONFIG_SCHEMA
    assert kind.probe is probe
    driver = kind.create_driver(driver_context(tmp_path))
    assert isinstance(driver, CodexDriver)
    for method in ("run_turn", "steer", "interrupt", "close"):
        assert callable(getattr(driver, method))


def test_paperclip_providers_hookimpl_matches_the_spec() -> None:
    pm = pluggy.PluginManager("paperclip")
    pm.add_hookspecs(paperclip_hookspecs.providers)
    pm.register(paperclip_codex.plugin)
    pm.check_pending()  # no implementation without a spec


def test_entry_point_names_the_plugin_module() -> None:
    try:
        dist = importlib.metadata.distribution("paperclip-codex")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("paperclip-codex is not installed in this environment")
    (entry,) = [ep for ep in dist.entry_points if ep.group == "paperclip"]
    assert entry.name == "codex"
    assert entry.value == "paperclip_codex.plugin"
    assert entry.load() is paperclip_codex.plugin
