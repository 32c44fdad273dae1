"""The core's default install, as a user gets it (tox env ``default-install``).

A fresh virtualenv gets the core from this tree with no extras, as ``pip install
paperclip-control-plane`` would: the plugin contract, the recovery kit and the
recovery policies are wheels built here and found through ``--find-links`` (they
are on no index), everything else comes at the versions of the lock. The core's
own dependencies must bring the five recovery policies, loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from paperclip.plugin_host.seed_policies import SEED_POLICIES

pytestmark = [pytest.mark.default_install, pytest.mark.process]

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ["hookspecs", "plugins/recovery-kit"] + [
    f"plugins/{p.distribution.removeprefix('paperclip-')}" for p in SEED_POLICIES
]
"""What the core's default install needs that no index has: built here."""


def clean_env(tmp_path: Path) -> dict[str, str]:
    """This session's environment without its virtualenv, its paths or Paperclip settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERCLIP_", "VIRTUAL_ENV"))}
    env.pop("PYTHONPATH", None)
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env["PAPERCLIP_DATA_DIR"] = str(tmp_path / "data")
    return env


def uv(*args: str, env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "uv", *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"uv {' '.join(args)}:\n{result.stderr[-4000:]}"


def build_wheels(wheels: Path, env: dict[str, str]) -> None:
    """A wheel of the core and of each local distribution it needs, built side by side."""
    builds = [
        subprocess.Popen(
            [sys.executable, "-m", "uv", "build", "--quiet", "--wheel", "--out-dir", wheels, src],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for src in [".", *LOCAL]
    ]
    for build in builds:
        out, _ = build.communicate(timeout=600)
        assert build.returncode == 0, f"{build.args}:\n{out[-4000:]}"


def paperclip(venv: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "paperclip"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def local_version(folder: str) -> str:
    project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
    package = ROOT / folder / project["name"].replace("-", "_")
    for line in (package / "__init__.py").read_text().splitlines():
        if line.startswith("__version__"):
            return line.split("=")[1].strip().strip("\"'")
    raise AssertionError(f"no __version__ in {package}")


@pytest.mark.timeout(900)
def test_a_plain_install_of_the_core_loads_the_five_recovery_policies(tmp_path):
    env = clean_env(tmp_path)
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    build_wheels(wheels, env)
    [core] = wheels.glob("paperclip_control_plane-*.whl")
    uv("venv", "--quiet", "--python", sys.executable, str(venv), env=env)
    # The core's wheel alone, no extras: what it depends on decides what comes with it.
    constraints = str(ROOT / "requirements" / "constraints.txt")
    install = ["pip", "install", "--quiet", "--python", str(venv), "--no-sources"]
    uv(*install, "--find-links", str(wheels), "-c", constraints, str(core), env=env)

    result = paperclip(venv, "plugins", "--json", env=env)

    assert result.returncode == 0, result.stderr
    plugins = {p["distribution"]: p for p in json.loads(result.stdout)["plugins"]}
    for policy in SEED_POLICIES:
        found = plugins.get(policy.distribution)
        assert found is not None, f"{policy.distribution} did not come with the core"
        folder = f"plugins/{policy.distribution.removeprefix('paperclip-')}"
        # The wheel built here, not a namesake from an index.
        assert (found["status"], found["code"], found["version"]) == (
            "loaded",
            None,
            local_version(folder),
        )
    # Doctor, which reads the same plugins, finds none of the seeds' policies off.
    doctor = json.loads(paperclip(venv, "doctor", "--json", env=env).stdout)
    assert [p["off"] for p in doctor["recovery_policies"]] == [None] * len(SEED_POLICIES)
