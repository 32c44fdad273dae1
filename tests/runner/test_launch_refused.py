"""The runner host decides what it executes: an agent asking for anything else starts nothing.

A control plane, a runner and the ``fixture`` provider as real processes.
Every launch profile of the fixture kind leaves a marker file when its
command runs, so "no process was started" is checked, not assumed: the
allowed profile, as a control, does leave its marker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from tests.support import fixture_provider
from tests.support.processes import RunnerProcess, ServerProcess, free_port, wait_until

pytestmark = pytest.mark.process


@pytest.fixture
def stack(paperclip_database_url, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    port = free_port()
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp_path / "data"),
        "PAPERCLIP_PORT": str(port),
        fixture_provider.MARKERS_ENV: str(markers),
        # This runner host takes back one of the kind's own profiles.
        "PAPERCLIP_RUNNER_LAUNCH": json.dumps({"fixture": {"second": []}}),
        **fixture_provider.install(tmp_path / "site"),
    }
    server = ServerProcess(env, tmp_path / "serve.log", "--no-runner").start()
    created = subprocess.run(
        [sys.executable, "-m", "paperclip", "runners", "create", "launch-test", "--json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    runner = RunnerProcess(
        [server.url],
        json.loads(created.stdout)["credential"],
        tmp_path / "runner",
        tmp_path / "runner.log",
        env=env,
    ).start()
    try:
        yield server.api(), markers, runner
    finally:
        runner.stop()
        server.stop()


def run_agent(api: httpx.Client, company: str, name: str, config: dict) -> dict:
    agent = api.post(
        f"/companies/{company}/agents",
        json={"name": name, "provider": "fixture", "provider_config": config},
    )
    assert agent.status_code == 201, agent.text
    issue = api.post(
        f"/companies/{company}/issues",
        json={"title": f"work for {name}", "assignee_agent_id": agent.json()["id"]},
    ).json()

    def finished():
        runs = api.get(f"/companies/{company}/runs", params={"issue_id": issue["id"]}).json()
        done = [r for r in runs["items"] if r["status"] in ("succeeded", "failed", "cancelled")]
        return done[0] if done else None

    return wait_until(finished, 90, 0.2, f"the run of {name}")


def test_a_profile_the_runner_does_not_offer_fails_before_any_process_starts(stack):
    api, markers, runner = stack
    company = api.post("/companies", json={"name": "Launch"}).json()["id"]

    # What the attack asked for, an executable in the agent's config: refused when made.
    for config in (
        {"command": ["/bin/sh", "-c", f"touch {markers}/pwned"]},
        {"launch": ["/bin/sh", "-c", f"touch {markers}/pwned"]},
    ):
        r = api.post(
            f"/companies/{company}/agents",
            json={"name": "attacker", "provider": "fixture", "provider_config": config},
        )
        assert r.status_code == 422, r.text

    # A name the control plane cannot judge: the runner's own configuration decides.
    for name, profile in (("taken-back", "second"), ("unknown", "evil")):
        run = run_agent(api, company, name, {"launch": profile})
        assert (run["status"], run["error_code"]) == ("failed", "launch_not_allowed"), run
        assert profile in run["error_message"], run
    assert sorted(os.listdir(markers)) == [], runner.tail()

    # The control: the profile this runner does offer starts its command.
    run_agent(api, company, "allowed", {})
    assert sorted(os.listdir(markers)) == ["default"], runner.tail()
