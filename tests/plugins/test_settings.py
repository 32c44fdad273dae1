"""The plugin settings, as an operator writes them in the environment."""

from __future__ import annotations

from paperclip.settings import Settings


def test_plugin_lists_are_comma_separated(monkeypatch, tmp_path):
    monkeypatch.setenv("PAPERCLIP_PLUGINS_DISABLE", "codex, Paperclip-Pi,,")
    monkeypatch.setenv("PAPERCLIP_PLUGINS_ONLY", "gateway")
    monkeypatch.setenv("PAPERCLIP_PLUGINS_STRICT", "true")
    settings = Settings(data_dir=tmp_path)
    assert settings.plugins_disable == frozenset({"codex", "paperclip-pi"})
    assert settings.plugins_only == frozenset({"gateway"})
    assert settings.plugins_strict is True


def test_an_empty_allow_list_allows_no_installed_plugin(monkeypatch, tmp_path):
    monkeypatch.setenv("PAPERCLIP_PLUGINS_ONLY", "")
    assert Settings(data_dir=tmp_path).plugins_only == frozenset()


def test_by_default_every_plugin_may_load(tmp_path):
    settings = Settings(data_dir=tmp_path)
    assert (settings.plugins_disable, settings.plugins_only, settings.plugins_strict) == (
        frozenset(),
        None,
        False,
    )
