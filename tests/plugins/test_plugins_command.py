"""``paperclip plugins`` and ``paperclip serve`` as real processes, with a fake installed plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from paperclip_hookspecs import HOOK_API

from paperclip.plugin_host.builtin import BUILTIN_PLUGINS
from tests.plugins.fakes import FakeSite, provider_module
from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process


def paperclip(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paperclip", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def site_env(fake_site: FakeSite, tmp_path) -> dict[str, str]:
    """The environment of a process that sees the fake site as installed."""
    path = os.pathsep.join([str(fake_site.path), os.environ.get("PYTHONPATH", "")])
    return {"PYTHONPATH": path, "PAPERCLIP_DATA_DIR": str(tmp_path / "data")}


def install_omega(fake_site: FakeSite) -> None:
    fake_site.install(
        "paperclip-omega",
        "4.5.6",
        entry_points={"omega": "omega_plugin"},
        modules={"omega_plugin": provider_module("omega")},
    )


def test_plugins_json_lists_builtins_and_an_installed_plugin(fake_site, site_env):
    install_omega(fake_site)
    result = paperclip("plugins", "--json", env=site_env)

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["hook_api"] == HOOK_API and report["problems"] == []
    names = [p["name"] for p in report["plugins"]]
    assert names[: len(BUILTIN_PLUGINS)] == [name for name, _ in BUILTIN_PLUGINS]
    [omega] = [p for p in report["plugins"] if p["name"] == "omega"]
    assert omega == {
        "name": "omega",
        "distribution": "paperclip-omega",
        "version": "4.5.6",
        "entry_point": "omega_plugin",
        "builtin": False,
        "status": "loaded",
        "hooks": ["paperclip_providers"],
        "hook_api": ">=1.0,<2",
        "code": None,
        "reason": None,
    }


def test_plugins_table_shows_a_skipped_plugin_and_why(fake_site, site_env):
    install_omega(fake_site)
    env = {**site_env, "PAPERCLIP_PLUGINS_DISABLE": "omega", "COLUMNS": "250"}
    result = paperclip("plugins", env=env)

    assert result.returncode == 0, result.stderr
    assert f"hook API {HOOK_API}" in result.stdout
    [row] = [line for line in result.stdout.splitlines() if "omega" in line]
    assert "paperclip-omega" in row and "4.5.6" in row
    assert "skipped: disabled by PAPERCLIP_PLUGINS_DISABLE" in row


def test_plugins_exits_1_when_strict_mode_would_stop_startup(fake_site, site_env):
    fake_site.install(
        "paperclip-broken",
        entry_points={"broken": "broken_cli_plugin"},
        modules={"broken_cli_plugin": "import a_dependency_that_is_not_installed\n"},
    )
    env = {**site_env, "PAPERCLIP_PLUGINS_STRICT": "true"}
    result = paperclip("plugins", "--json", env=env)

    assert result.returncode == 1
    [problem] = json.loads(result.stdout)["problems"]
    assert problem.startswith("strict mode (PAPERCLIP_PLUGINS_STRICT): not loaded: plugin 'broken'")


def test_serve_loads_an_installed_plugin_at_the_next_start(
    fake_site, site_env, paperclip_database_url, tmp_path
):
    env = {**site_env, "PAPERCLIP_DATABASE_URL": paperclip_database_url, "PAPERCLIP_PORT": "0"}
    before = ServerProcess(env, tmp_path / "before.log").start()
    try:
        plugins = before.api().get("/plugins").json()["plugins"]
        assert "omega" not in [p["name"] for p in plugins]
        assert all(p["status"] == "loaded" for p in plugins if p["builtin"])
    finally:
        before.stop()

    install_omega(fake_site)  # installing is all it takes: no change to the core
    after = ServerProcess(env, tmp_path / "after.log").start()
    try:
        plugins = after.api().get("/plugins").json()["plugins"]
        [omega] = [p for p in plugins if p["name"] == "omega"]
        assert (omega["version"], omega["status"]) == ("4.5.6", "loaded")
    finally:
        after.stop()


def test_serve_refuses_to_start_in_strict_mode_with_a_broken_plugin(
    fake_site, site_env, paperclip_database_url, tmp_path
):
    fake_site.install(
        "paperclip-broken",
        entry_points={"broken": "broken_serve_plugin"},
        modules={"broken_serve_plugin": "raise RuntimeError('misconfigured')\n"},
    )
    env = {
        **site_env,
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_PORT": "0",
        "PAPERCLIP_PLUGINS_STRICT": "1",
    }
    result = paperclip("serve", "--json", env=env)
    assert result.returncode != 0
    assert "import of broken_serve_plugin failed: RuntimeError: misconfigured" in result.stderr
