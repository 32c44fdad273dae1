"""``paperclip doctor`` only reads, and reports the provider CLIs the local runner would start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from paperclip.db.access import running_as_root
from tests.support import fixture_provider
from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process


def doctor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paperclip", "doctor", *args],
        env={**os.environ, "PAPERCLIP_DATABASE_URL": "", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def open_folder():
    """A folder everyone may enter (pytest's own temp root is closed to other users)."""
    path = Path(tempfile.mkdtemp(prefix="paperclip-doctor-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_doctor_creates_nothing(open_folder):
    data_dir = open_folder / "never-made"
    result = doctor({"PAPERCLIP_DATA_DIR": str(data_dir)}, "--json")
    assert result.returncode == 0, result.stderr
    database = json.loads(result.stdout)["database"]
    assert database["kind"] == "embedded" and database["status"] == "not_created"
    assert not data_dir.exists()


def test_doctor_says_when_the_database_could_not_run_here(tmp_path):
    if not running_as_root():
        pytest.skip("only root's server runs as another user")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    result = doctor({"PAPERCLIP_DATA_DIR": str(closed / "data")}, "--json")
    assert result.returncode == 1
    database = json.loads(result.stdout)["database"]
    assert database["status"] == "unusable" and "PAPERCLIP_DATA_DIR" in database["error"]
    assert not (closed / "data").exists()


def test_doctor_reads_a_running_embedded_database_and_starts_a_stopped_one_never(
    tmp_path, open_folder
):
    data_dir = open_folder
    env = {"PAPERCLIP_DATA_DIR": str(data_dir), "PAPERCLIP_PORT": "0"}
    server = ServerProcess({**env, "PAPERCLIP_DATABASE_URL": ""}, tmp_path / "s.log", "--no-runner")
    try:
        server.start()
        running = json.loads(doctor(env, "--json").stdout)["database"]
        assert running["status"] == "ok" and running["up_to_date"] is True
        assert server.terminate() == 0
        stopped = doctor(env, "--json")
        assert stopped.returncode == 0
        assert json.loads(stopped.stdout)["database"]["status"] == "stopped"
        assert not (data_dir / "pgdata" / "postmaster.pid").exists()  # still not running
    finally:
        server.stop()


def test_doctor_lists_provider_clis_per_launch_profile(tmp_path):
    env = {
        "PAPERCLIP_DATA_DIR": str(tmp_path / "data"),
        "PAPERCLIP_RUNNER_LAUNCH": json.dumps(
            {"fixture": {"broken": ["/nonexistent/fixture-cli"]}}
        ),
        **fixture_provider.install(tmp_path / "site"),
    }
    report = json.loads(doctor(env, "--json").stdout)
    clis = {(c["provider"], c["profile"]): c for c in report["providers"]}
    python = sys.version.split()[0]
    for profile in ("default", "second"):
        cli = clis[("fixture", profile)]
        assert cli["found"] is True and cli["version"] == f"fixture {python}"
        assert cli["command"][0] == sys.executable
    broken = clis[("fixture", "broken")]
    assert broken["found"] is False and broken["hint"] == "install /nonexistent/fixture-cli"

    text = doctor(env).stdout
    assert "fixture/default" in text and f"fixture {python}" in text
    assert "fixture/broken" in text and "missing" in text


def test_doctor_warns_when_a_seeds_recovery_policy_is_off(open_folder):
    env = {"PAPERCLIP_DATA_DIR": str(open_folder / "data")}
    installed = json.loads(doctor(env, "--json").stdout)["recovery_policies"]
    assert {p["distribution"] for p in installed} >= {
        "paperclip-unpresented-answers",
        "paperclip-unread-steers",
        "paperclip-orphaned-callbacks",
        "paperclip-cleanup-holds",
        "paperclip-lost-runs",
    }
    assert all(p["installed"] for p in installed)  # the default install has them all
    assert "recovery policies off" not in doctor(env).stdout

    env["PAPERCLIP_PLUGINS_DISABLE"] = "unpresented-answers,unread-steers"
    report = json.loads(doctor(env, "--json").stdout)
    off = [
        (p["distribution"], p["off"], p["setting"])
        for p in report["recovery_policies"]
        if not p["installed"]
    ]
    assert off == [
        ("paperclip-unpresented-answers", "disabled", "PAPERCLIP_PLUGINS_DISABLE"),
        ("paperclip-unread-steers", "disabled", "PAPERCLIP_PLUGINS_DISABLE"),
    ]
    assert report["ok"] is True  # a warning: the server runs, and says what it cannot recover
    text = doctor(env).stdout
    assert (
        "warning: paperclip-unpresented-answers is off (disabled by PAPERCLIP_PLUGINS_DISABLE)"
        in text
    )
    assert "never presented" in text
    assert "unset the setting that turns one off" in text


def test_the_default_install_has_what_doctor_asks_for(open_folder):
    # The core's own dependencies name every seed's policy, each at a version floor.
    env = {"PAPERCLIP_DATA_DIR": str(open_folder / "data")}
    asked = {
        p["distribution"] for p in json.loads(doctor(env, "--json").stdout)["recovery_policies"]
    }
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    required = {Requirement(d) for d in project["project"]["dependencies"]}
    assert asked <= {r.name for r in required}
    assert all(r.specifier for r in required if r.name in asked)
    assert "policies" not in project["project"]["optional-dependencies"]
