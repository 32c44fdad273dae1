"""Really installed fixture plugins of other hook-API versions (tox env ``compat``).

``tests/fixtures/plugins/legacy`` was written against hook API 1.0 and must load
and work on the current core; ``tests/fixtures/plugins/future`` needs hook API
1.99 and must be refused, by name, with the range it asked for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version

import pytest
from paperclip_hookspecs import HOOK_API
from paperclip_hookspecs.providers import DriverContext, ProviderEvent, TurnInput

from paperclip.plugin_host import PluginStatus, SkipCode

pytestmark = pytest.mark.compat


def record(host, name):
    [found] = [r for r in host.records() if r.name == name]
    return found


def test_the_fixtures_are_really_installed():
    assert version("paperclip-fixture-legacy") == "0.3.0"
    assert version("paperclip-fixture-future") == "2.0.0"
    assert version("paperclip-hookspecs") == HOOK_API


async def test_a_plugin_written_for_an_older_minor_loads_and_works(
    paperclip_installed_plugin_host, tmp_path
):
    legacy = record(paperclip_installed_plugin_host, "fixture-legacy")
    assert (legacy.status, legacy.distribution, legacy.version, legacy.hook_api) == (
        PluginStatus.LOADED,
        "paperclip-fixture-legacy",
        "0.3.0",
        ">=1.0,<2",
    )
    assert legacy.hooks == ("paperclip_providers",)

    kind = paperclip_installed_plugin_host.provider("legacy-echo")
    events: list[ProviderEvent] = []

    async def emit(event: ProviderEvent) -> None:
        events.append(event)

    driver = kind.create_driver(DriverContext(state_dir=str(tmp_path)))
    result = await driver.run_turn(TurnInput(run_id="r1", prompt="ping", cwd=str(tmp_path)), emit)
    await driver.close()
    assert (result.status, result.session_ref) == ("completed", "legacy-r1")
    assert [e.type for e in events] == ["item.completed", "turn.completed"]
    # The newer hooks it does not implement are answered by the built-ins.
    paperclip_installed_plugin_host.check_pending()


def test_a_plugin_requiring_a_newer_hook_api_is_refused_clearly(paperclip_installed_plugin_host):
    future = record(paperclip_installed_plugin_host, "fixture-future")
    assert (future.status, future.code) == (PluginStatus.SKIPPED, SkipCode.INCOMPATIBLE_HOOK_API)
    assert future.reason == (
        f"requires paperclip-hookspecs>=1.99,<2, but the running hook API is {HOOK_API}"
    )
    assert "paperclip_fixture_future.plugin" not in sys.modules  # never imported


def test_paperclip_plugins_shows_both(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "paperclip", "plugins", "--json"],
        env={**os.environ, "PAPERCLIP_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    plugins = {p["name"]: p for p in json.loads(result.stdout)["plugins"]}
    assert (plugins["fixture-legacy"]["status"], plugins["fixture-legacy"]["version"]) == (
        "loaded",
        "0.3.0",
    )
    assert plugins["fixture-future"]["status"] == "skipped"
    assert plugins["fixture-future"]["code"] == "incompatible_hook_api"
    # One clear line on stderr says the same.
    [line] = [ln for ln in result.stderr.splitlines() if "paperclip-fixture-future" in ln]
    assert "skipped: requires paperclip-hookspecs>=1.99,<2" in line
