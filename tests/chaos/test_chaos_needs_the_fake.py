"""``paperclip chaos`` runs the fake Codex, a distribution of its own: without it, it says
what to install, and starts nothing."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from paperclip.cli.main import cli


def test_chaos_without_the_fake_codex_says_what_to_install(monkeypatch: pytest.MonkeyPatch):
    # As if paperclip-codex-testing were not installed: its import fails.
    monkeypatch.setitem(sys.modules, "paperclip_codex_testing", None)
    monkeypatch.setitem(sys.modules, "paperclip_codex_testing.fake_app_server", None)

    result = CliRunner().invoke(cli, ["chaos", "--runs", "1"])

    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "paperclip-codex-testing is not installed" in said
    assert "pip install 'paperclip-codex[testing]'" in said
