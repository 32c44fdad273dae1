"""``paperclip serve`` as a real process on the embedded PostgreSQL: SIGKILL, start again, data intact."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import httpx
import psutil
import pytest

from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process


@pytest.fixture
def data_dir():
    # Not under pytest's temp root: pytest keeps that folder 0700 (and resets it when
    # another session starts), and the embedded server's own user must traverse it.
    path = Path(tempfile.mkdtemp(prefix="paperclip-data-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def postgres_of(data_dir):
    return [
        p
        for p in psutil.process_iter(["name", "cmdline"])
        if p.info["name"] == "postgres" and str(data_dir) in " ".join(p.info["cmdline"] or [])
    ]


def test_data_survives_sigkill_of_the_server(data_dir, tmp_path):
    env = {"PAPERCLIP_DATA_DIR": str(data_dir), "PAPERCLIP_PORT": "0", "PAPERCLIP_DATABASE_URL": ""}
    server = ServerProcess(env, tmp_path / "serve.log").start()
    try:
        health = httpx.get(f"{server.url}/api/health").json()
        assert health["database"]["kind"] == "embedded" and health["database"]["status"] == "ok"
        company = server.api().post("/companies", json={"name": "Durable"}).json()
        issue = (
            server.api()
            .post(f"/companies/{company['id']}/issues", json={"title": "keep me"})
            .json()
        )
        server.kill()

        server = ServerProcess(env, tmp_path / "serve.log").start()
        # Restarted on the same data dir, it keeps its operator token.
        got = server.api().get(f"/companies/{company['id']}/issues/{issue['id']}")
        assert got.status_code == 200 and got.json()["title"] == "keep me"
        # The killed process's handle was dropped, so a clean stop stops PostgreSQL too.
        assert server.terminate() == 0
        assert postgres_of(data_dir) == []
    finally:
        server.stop()
        for proc in postgres_of(data_dir):
            proc.kill()


def test_sigterm_finishes_and_stops_the_embedded_database(data_dir, tmp_path):
    env = {"PAPERCLIP_DATA_DIR": str(data_dir), "PAPERCLIP_PORT": "0", "PAPERCLIP_DATABASE_URL": ""}
    server = ServerProcess(env, tmp_path / "serve.log").start()
    try:
        assert postgres_of(data_dir)
        assert server.terminate() == 0
        assert postgres_of(data_dir) == []
        assert "stopping the embedded PostgreSQL" in server.tail()
    finally:
        server.stop()
