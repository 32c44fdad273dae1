"""A seed's recovery policy turned off: ``paperclip serve`` warns, ``/api/health`` says degraded.

The policies are part of the core's default install (every tox environment that
installs the core has them), so a server started with no setting has them all.
"""

from __future__ import annotations

import json

import httpx
import pytest

from paperclip.plugin_host.seed_policies import SEED_POLICIES
from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process

UNREAD_STEERS = next(p for p in SEED_POLICIES if p.distribution == "paperclip-unread-steers")


def serve(paperclip_database_url, tmp_path, **env: str) -> ServerProcess:
    base = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp_path / "data"),
        "PAPERCLIP_PORT": "0",
        "PAPERCLIP_LOG_FORMAT": "json",
    }
    return ServerProcess(base | env, tmp_path / "serve.log", "--no-runner").start()


def log_lines(server: ServerProcess) -> list[dict]:
    lines = server.log_path.read_text().splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_a_default_install_is_healthy_with_every_policy(paperclip_database_url, tmp_path):
    server = serve(paperclip_database_url, tmp_path)
    try:
        r = httpx.get(f"{server.url}/api/health")
        assert r.status_code == 200
        assert (r.json()["status"], r.json()["recovery_policies_off"]) == ("ok", [])
        plugins = {p["distribution"]: p for p in server.api().get("/plugins").json()["plugins"]}
        assert all(plugins[p.distribution]["status"] == "loaded" for p in SEED_POLICIES)
    finally:
        server.stop()
    assert not [e for e in log_lines(server) if "recovery policy" in e["message"]]


def test_a_disabled_policy_is_a_warning_and_a_degraded_health(paperclip_database_url, tmp_path):
    server = serve(paperclip_database_url, tmp_path, PAPERCLIP_PLUGINS_DISABLE="unread-steers")
    try:
        r = httpx.get(f"{server.url}/api/health")
        # Degraded, yet serving: a load balancer keeps it (503 is for the database).
        assert r.status_code == 200
        body = r.json()
        assert body["status"] == "degraded" and body["database"]["status"] == "ok"
        assert body["recovery_policies_off"] == [
            {
                "distribution": "paperclip-unread-steers",
                "seed": "004",
                "why": "disabled",
                "setting": "PAPERCLIP_PLUGINS_DISABLE",
                "without": UNREAD_STEERS.without,
            }
        ]
    finally:
        server.stop()
    [warning] = [e for e in log_lines(server) if "recovery policy" in e["message"]]
    assert warning["level"] == "warning"
    assert warning["message"] == (
        "recovery policy paperclip-unread-steers is off (disabled by PAPERCLIP_PLUGINS_DISABLE): "
        f"after a restart, {UNREAD_STEERS.without}"
    )
