"""``probe``: is the CLI installed, where, which version, and what to do when it is not."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from codex_testing import PLUGIN_ROOT
from paperclip_codex.probe import probe, version_command
from paperclip_codex_testing import __version__ as fake_version

pytestmark = pytest.mark.process


def fake_cli(tmp_path: Path, script: str) -> str:
    path = tmp_path / "codex"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_a_missing_cli_says_how_to_install_it_and_point_it_at_a_model() -> None:
    found = probe(("/nonexistent/bin/codex", "app-server"))
    assert not found.found and found.version is None
    assert "npm install -g @openai/codex@0.171.0" in found.hint
    assert "base_url" in found.hint and "model" in found.hint


def test_the_tested_version_is_reported_with_where_it_lives(tmp_path: Path) -> None:
    cli = fake_cli(tmp_path, 'echo "codex-cli 0.171.0"')
    found = probe((cli, "app-server"))
    assert (found.found, found.version, found.path) == (True, "0.171.0", cli)
    assert "tested with" not in found.hint


def test_another_version_is_reported_with_the_tested_one(tmp_path: Path) -> None:
    found = probe((fake_cli(tmp_path, 'echo "codex-cli 0.180.2"'), "app-server"))
    assert found.version == "0.180.2"
    assert "tested with codex-cli 0.171.0" in found.hint


def test_a_cli_that_fails_is_found_without_a_version(tmp_path: Path) -> None:
    found = probe((fake_cli(tmp_path, "echo broken >&2; exit 3"), "app-server"))
    assert found.found and found.version is None
    assert "status 3" in found.hint and "broken" in found.hint


def test_the_probe_writes_nothing_into_the_users_codex_home(tmp_path: Path) -> None:
    marker = tmp_path / "seen-home"
    cli = fake_cli(tmp_path, f'echo "$CODEX_HOME" > {marker}; echo "codex-cli 0.171.0"')
    probe((cli, "app-server"))
    seen = Path(marker.read_text().strip())
    assert seen.name.startswith("paperclip-codex-probe-") and not seen.exists()


def test_the_fake_app_server_profile_reports_its_own_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", f"{PLUGIN_ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    command = (
        sys.executable,
        "-m",
        "paperclip_codex_testing.fake_app_server",
        "--script-dir",
        "/x",
    )
    assert version_command(command) == [*command[:3], "--version"]
    found = probe(command)
    assert found.found and found.version == fake_version, found.hint
