"""The client commands on a server in authenticated mode: the key comes from
``PAPERCLIP_API_KEY``, and a missing, wrong or too weak one is one line saying what to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process


@pytest.fixture
def server(paperclip_database_url, tmp_path):
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp_path / "data"),
        "PAPERCLIP_DEPLOYMENT_MODE": "authenticated",
        "PAPERCLIP_PORT": "0",
    }
    process = ServerProcess(env, tmp_path / "serve.log", "--no-runner").start()
    yield process, env
    process.stop()


def paperclip(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCLIP_")}
    return subprocess.run(
        [sys.executable, "-m", "paperclip", *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_key_comes_from_the_environment(server):
    process, server_env = server
    admin = json.loads(paperclip("keys", "create", "cli-admin", "--json", env=server_env).stdout)
    client = {"PAPERCLIP_URL": process.url}

    made = paperclip(
        "companies", "create", "Keyed", "--json", env={**client, "PAPERCLIP_API_KEY": admin["key"]}
    )
    assert made.returncode == 0, made.stderr
    company = json.loads(made.stdout)

    missing = paperclip("companies", env=client)
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: unauthorized: ")
    assert "Set PAPERCLIP_API_KEY to a key of this server" in missing.stderr
    assert len(missing.stderr.splitlines()) == 1

    wrong = paperclip("companies", env={**client, "PAPERCLIP_API_KEY": "pck_wrong"})
    assert wrong.returncode == 1 and wrong.stderr.startswith("error: invalid_api_key: ")

    viewer = json.loads(
        paperclip(
            "keys",
            "create",
            "reader",
            "--company",
            company["id"],
            "--role",
            "viewer",
            "--json",
            env=server_env,
        ).stdout
    )
    as_viewer = {**client, "PAPERCLIP_API_KEY": viewer["key"]}
    assert (
        json.loads(paperclip("companies", "--json", env=as_viewer).stdout)[0]["id"] == company["id"]
    )
    refused = paperclip(
        "issues", "create", "Not mine to write", "--company", "Keyed", env=as_viewer
    )
    assert refused.returncode == 1 and refused.stderr.startswith("error: insufficient_role: ")
    assert "Traceback" not in missing.stderr + wrong.stderr + refused.stderr
