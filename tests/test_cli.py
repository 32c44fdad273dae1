"""The ``paperclip`` command as a user runs it: real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

import paperclip
from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process


def run(*args, env=None, check=True):
    import os

    result = subprocess.run(
        [sys.executable, "-m", "paperclip", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_version():
    assert run("--version").stdout.strip() == f"paperclip, version {paperclip.__version__}"


def test_local_trusted_refuses_a_public_address(tmp_path):
    result = run(
        "serve", "--host", "0.0.0.0", env={"PAPERCLIP_DATA_DIR": str(tmp_path)}, check=False
    )
    assert result.returncode == 2
    assert "local_trusted" in result.stderr and "loopback" in result.stderr


def test_invalid_setting_is_named(tmp_path):
    result = run(
        "doctor", env={"PAPERCLIP_PORT": "99999", "PAPERCLIP_DATA_DIR": str(tmp_path)}, check=False
    )
    assert result.returncode == 1
    assert "PAPERCLIP_PORT" in result.stderr


def test_doctor_and_db_commands(paperclip_database_url, tmp_path):
    env = {"PAPERCLIP_DATABASE_URL": paperclip_database_url, "PAPERCLIP_DATA_DIR": str(tmp_path)}
    report = json.loads(run("doctor", "--json", env=env).stdout)
    assert report["ok"] is True
    assert report["database"]["kind"] == "external" and report["database"]["status"] == "ok"
    assert report["database"]["up_to_date"] is True
    current = json.loads(run("db", "current", "--json", env=env).stdout)
    assert current["up_to_date"] is True
    assert json.loads(run("db", "upgrade", "--json", env=env).stdout)["revision"] == current["head"]


def test_doctor_reports_an_unreachable_database(tmp_path):
    env = {
        "PAPERCLIP_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "PAPERCLIP_DATA_DIR": str(tmp_path),
    }
    result = run("doctor", "--json", env=env, check=False)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["database"]["status"] == "unavailable"


def test_serve_waits_for_an_unreachable_database_then_says_so_without_a_traceback(tmp_path):
    env = {
        "PAPERCLIP_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "PAPERCLIP_DATA_DIR": str(tmp_path),
        "PAPERCLIP_DATABASE_WAIT_SECONDS": "2",
    }
    result = run("serve", "--no-runner", "--port", "0", env=env, check=False)
    assert result.returncode == 2, result.stderr
    assert "waiting for it" in result.stderr
    assert "the database is unavailable: ConnectionRefusedError" in result.stderr
    assert "PAPERCLIP_DATABASE_WAIT_SECONDS" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_authenticated_mode_with_keys(paperclip_database_url, tmp_path):
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp_path),
        "PAPERCLIP_DEPLOYMENT_MODE": "authenticated",
        "PAPERCLIP_PORT": "0",
    }
    created = json.loads(run("keys", "create", "ci", "--json", env=env).stdout)
    secret = created["key"]
    listed = json.loads(run("keys", "list", "--json", env=env).stdout)
    assert any(k["id"] == created["id"] for k in listed)
    assert secret not in json.dumps(listed)

    server = ServerProcess(env, tmp_path / "serve.log").start()
    try:
        url = f"{server.url}/api/companies"
        no_key = httpx.get(url)
        assert no_key.status_code == 401 and no_key.json()["code"] == "unauthorized"
        bad = httpx.get(url, headers={"Authorization": "Bearer nope"})
        assert bad.status_code == 401 and bad.json()["code"] == "invalid_api_key"
        ok = httpx.post(url, json={"name": "Keyed"}, headers={"Authorization": f"Bearer {secret}"})
        assert ok.status_code == 201
        assert httpx.get(f"{server.url}/api/health").status_code == 200  # public

        company = ok.json()["id"]
        member = json.loads(
            run("keys", "create", "bot", "--company", company, "--json", env=env).stdout
        )
        assert (member["role"], member["company_id"]) == ("member", company)
        mine = httpx.get(url, headers={"Authorization": f"Bearer {member['key']}"}).json()
        assert [c["id"] for c in mine["items"]] == [company]

        run("keys", "revoke", created["id"], env=env)
        revoked = httpx.get(url, headers={"Authorization": f"Bearer {secret}"})
        assert revoked.status_code == 401
        again = run("keys", "revoke", created["id"], env=env, check=False)
        assert again.returncode == 1 and "already revoked" in again.stderr
    finally:
        server.stop()


def test_key_names_are_required_and_unique(paperclip_database_url, tmp_path):
    env = {"PAPERCLIP_DATABASE_URL": paperclip_database_url, "PAPERCLIP_DATA_DIR": str(tmp_path)}
    empty = run("keys", "create", "  ", env=env, check=False)
    assert empty.returncode == 1 and "name" in empty.stderr
    run("keys", "create", "ops", env=env)
    twice = run("keys", "create", "ops", env=env, check=False)
    assert twice.returncode == 1 and "already exists" in twice.stderr
    lonely_role = run("keys", "create", "x", "--role", "viewer", env=env, check=False)
    assert lonely_role.returncode == 2 and "--company" in lonely_role.stderr
