"""The client commands on a server without login: they read the operator token of the data
dir when the server asks for it, never send it to another host, and ``PAPERCLIP_API_KEY``
still wins; ``paperclip board`` prints the board's sign-in URL."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from paperclip.cli_kit.client import operator_token
from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def server(paperclip_database_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("operator-cli")
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp / "data"),
        "PAPERCLIP_PORT": "0",
    }
    process = ServerProcess(env, tmp / "serve.log", "--no-runner").start()
    yield process
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


def test_the_commands_read_the_token_of_the_data_dir(server):
    made = paperclip("companies", "create", "Tokened", "--json", env=server.client_env)
    assert made.returncode == 0, made.stderr
    listed = paperclip("companies", "--json", env=server.client_env)
    assert listed.returncode == 0, listed.stderr
    assert "Tokened" in [c["name"] for c in json.loads(listed.stdout)]


def test_without_the_servers_data_dir_a_command_says_what_to_do(server, tmp_path):
    elsewhere = {**server.client_env, "PAPERCLIP_DATA_DIR": str(tmp_path / "another")}
    refused = paperclip("companies", env=elsewhere)
    assert refused.returncode == 1
    (line,) = refused.stderr.splitlines()
    assert line.startswith("error: operator_token_required: ")
    assert "PAPERCLIP_DATA_DIR" in line and "Traceback" not in refused.stderr


def test_an_api_key_in_the_environment_wins(server):
    keyed = paperclip("companies", env={**server.client_env, "PAPERCLIP_API_KEY": "pck_wrong"})
    assert keyed.returncode == 1
    assert keyed.stderr.startswith("error: invalid_api_key: ")


def test_board_prints_the_sign_in_url(server):
    said = paperclip("board", env=server.client_env)
    assert said.returncode == 0, said.stderr
    assert said.stdout.strip() == f"{server.url}/?token={server.token}"
    as_json = json.loads(paperclip("board", "--json", env=server.client_env).stdout)
    assert as_json == {"board_url": f"{server.url}/?token={server.token}"}


def test_the_token_never_goes_to_another_host(server, monkeypatch):
    monkeypatch.setenv("PAPERCLIP_DATA_DIR", server.client_env["PAPERCLIP_DATA_DIR"])
    assert operator_token(server.url) == server.token
    assert operator_token("http://localhost:3100") == server.token
    assert operator_token("http://paperclip.example.com:3100") is None
    assert operator_token("http://192.168.1.20:3100") is None
