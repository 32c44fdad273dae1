"""``paperclip routines`` against a running server: names people use, one-line errors."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support import fixture_provider
from tests.support.processes import PAPERCLIP, ServerProcess

pytestmark = [pytest.mark.process]


@pytest.fixture
def served(paperclip_database_url, tmp_path):
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp_path / "data"),
        "PAPERCLIP_PORT": "0",
        **fixture_provider.install(tmp_path / "site"),
    }
    server = ServerProcess(env, tmp_path / "serve.log", "--no-runner").start()
    try:
        yield server
    finally:
        server.stop()


def cli(server, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*PAPERCLIP, "routines", *args, "--url", server.url],
        env={**os.environ, **server.client_env},
        capture_output=True,
        text=True,
    )
    assert (done.returncode == 0) == ok, done.stderr
    assert "Traceback" not in done.stderr
    return done


def test_list_show_run_history_and_disable_by_name(served):
    with served.api() as api:
        company = api.post(
            "/companies", json={"name": "Routines CLI", "issue_prefix": "RCL"}
        ).json()
        agent = api.post(
            f"/companies/{company['id']}/agents", json={"name": "triager", "provider": "fixture"}
        ).json()
        made = api.post(
            f"/companies/{company['id']}/routines",
            json={
                "name": "Weekly report",
                "agent_id": agent["id"],
                "title": "Weekly report {{date}}",
                "cron": "0 9 * * 1",
                "timezone": "Europe/Paris",
            },
        )
        assert made.status_code == 201, made.text
    where = ("--company", "RCL")

    listed = cli(served, "list", *where).stdout
    assert "Weekly report" in listed and "0 9 * * 1 (Europe/Paris)" in listed
    shown = cli(served, "show", "weekly REPORT", *where).stdout
    assert shown.count("next ") == 5 and "skip_if_open" in shown

    ran = cli(served, "run", "Weekly report", *where, "--key", "k1").stdout
    assert ran.startswith("started: RCL-1 Weekly report ")
    again = cli(served, "run", "Weekly report", *where, "--key", "k1").stdout
    assert "nothing was run again" in again
    skipped = cli(served, "run", "Weekly report", *where).stdout
    assert skipped.strip() == "skipped (open_execution)"
    history = cli(served, "history", "Weekly report", *where).stdout.splitlines()
    assert len(history) == 2 and "skipped (open_execution)" in history[0]

    assert "disabled" in cli(served, "disable", "Weekly report", *where).stdout
    refused = cli(served, "run", "Weekly report", *where, ok=False).stderr
    assert "routine_disabled" in refused and len(refused.strip().splitlines()) == 1
    missing = cli(served, "show", "Nightly", *where, ok=False).stderr
    assert "no routine 'Nightly' in Routines CLI" in missing
