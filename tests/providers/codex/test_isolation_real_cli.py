"""Agents are not the operator: the real Codex CLI's shell, as a second Unix user.

Issue 38, finding 3: provider processes ran as the runner's user (root here) with its
whole environment, so an agent's shell read the runner credential, the data dir and the
database socket. ``paperclip serve`` runs as root here, with its own runner; the runner
starts Codex as ``paperclip-agent``. The model (the scripted endpoint) runs one command
with every sandbox off (a model profile allows ``danger-full-access``: the operating
system's user is what stops it) that tries each, and reads every environment it can;
it fails at each, and the run itself succeeds.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.providers.codex.conftest import MODEL_KEY_VARIABLE, real_agent_config
from tests.providers.codex.test_real_cli import WAIT, read_comment_finish
from tests.support.git_repos import git, make_repo
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import calls, codex_shell
from tests.support.processes import ServerProcess, free_port, wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.codex_cli]

OTHER_KEY = "OTHER_TENANT_API_KEY"
OTHER_VALUE = "another-profiles-key-value"
OPERATOR_VALUE = "postgres://operator:hunter2@db.internal/paperclip"


@pytest.fixture
def base() -> Path:
    """A folder every user may pass through (pytest's own are closed to all but root)."""
    folder = Path(tempfile.mkdtemp(prefix="pc-isolation-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="a second Unix user is made by root")
def finished_run(api, company: str, issue_id: str) -> dict:
    """The issue's run, once it has succeeded or failed."""

    def finished():
        runs = api.get(f"/companies/{company}/runs", params={"issue_id": issue_id}).json()
        done = [r for r in runs["items"] if r["status"] in ("succeeded", "failed")]
        return done[0] if done else None

    return wait_until(finished, WAIT, 0.2, "the run")


def test_an_agents_shell_reaches_nothing_of_the_operators_and_the_run_succeeds(
    paperclip_database_url, codex_cli, model_endpoint: ModelEndpoint, base: Path
):
    data = base / "data"
    socket_dir = make_url(paperclip_database_url).query.get("host")
    assert socket_dir, paperclip_database_url
    socket = f"{socket_dir}/.s.PGSQL.{make_url(paperclip_database_url).port or 5432}"
    python = shutil.which("python3", path="/usr/bin:/bin") or "python3"
    probe = " ; ".join(
        [
            "echo UID=$(id -u)",
            f"cat {data}/runner.credential >/dev/null 2>&1 && echo CREDENTIAL=read "
            "|| echo CREDENTIAL=denied",
            f"ls {socket_dir} >/dev/null 2>&1 && echo DATABASE=listed || echo DATABASE=denied",
            f"ls {data}/runner/runs >/dev/null 2>&1 && echo RUNS=listed || echo RUNS=denied",
            f'{python} -c "import socket; s = socket.socket(socket.AF_UNIX); '
            f"s.connect('{socket}')\" 2>/dev/null && echo SOCKET=connected "
            "|| echo SOCKET=denied",
            "echo HOME=$HOME",
            "stat -c FOLDER=%a:%U .",
            # Every environment this user can read: its own processes' (the provider's too).
            "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | "
            f"grep -c -e {OTHER_VALUE} -e hunter2 -e pcrn_ | sed s/^/LEAKS=/",
            "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | "
            f"grep -c ^{MODEL_KEY_VARIABLE}= | sed s/^/GRANTED=/",
        ]
    )
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    model_endpoint.script(model, [calls(codex_shell(probe)), *read_comment_finish("Checked.")])
    port = free_port()
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(data),
        "PAPERCLIP_PORT": str(port),
        "PAPERCLIP_RUNNER_LAUNCH": json.dumps(
            {"codex": {"default": [str(codex_cli), "app-server"]}}
        ),
        "PAPERCLIP_RUNNER_MODELS": json.dumps(
            {
                "default": {
                    "endpoints": [model_endpoint.url],
                    "keys": [MODEL_KEY_VARIABLE, OTHER_KEY],
                    "sandbox": ["danger-full-access"],
                }
            }
        ),
        MODEL_KEY_VARIABLE: "scripted-dummy-key",
        OTHER_KEY: OTHER_VALUE,
        "OPERATOR_DATABASE": OPERATOR_VALUE,
    }
    server = ServerProcess(env, base / "serve.log").start()
    try:
        api = server.api()
        company = api.post("/companies", json={"name": "Isolated"}).json()["id"]
        agent = api.post(
            f"/companies/{company}/agents",
            json={
                "name": "prober",
                "provider": "codex",
                "provider_config": real_agent_config(
                    model_endpoint, model, sandbox="danger-full-access"
                ),
            },
        )
        assert agent.status_code == 201, agent.text
        issue = api.post(
            f"/companies/{company}/issues",
            json={"title": "Look around", "assignee_agent_id": agent.json()["id"]},
        ).json()
        run = finished_run(api, company, issue["id"])
        assert run["status"] == "succeeded", (run["error_message"], server.tail())
    finally:
        server.stop()

    [output] = [
        str(o.get("output"))
        for r in model_endpoint.scripted(model)
        for o in r.tool_outputs()
        if "UID=" in str(o.get("output"))
    ][:1]
    found = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
    agent_user = pwd.getpwnam("paperclip-agent")
    assert found["UID"] == str(agent_user.pw_uid), output
    assert found["CREDENTIAL"] == "denied", output
    assert found["DATABASE"] == "denied", output
    assert found["RUNS"] == "denied", output
    assert found["SOCKET"] == "denied", output
    assert found["FOLDER"] == "700:paperclip-agent", output
    assert found["HOME"].startswith(f"{data}/runner/runs/"), output
    # No other profile's key, no operator setting, no runner credential; its own key only.
    assert found["LEAKS"] == "0", output
    assert found["GRANTED"] != "0", output
    # The credential is really there, and really readable by the runner's user.
    assert (data / "runner.credential").read_text().startswith("pcrn_")


@pytest.mark.skipif(os.geteuid() != 0, reason="a second Unix user is made by root")
def test_an_agent_in_its_worktree_is_its_own_user_and_commits_on_the_issue_branch(
    paperclip_database_url, codex_cli, model_endpoint: ModelEndpoint, base: Path
):
    repos = base / "repos"
    repo = make_repo(repos / "app")
    main = git(repo, "rev-parse", "main")
    work = "id -u && printf 'fixed\\n' > fix.txt && git add fix.txt && git commit -qm 'Fix it'"
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    model_endpoint.script(
        model,
        [
            calls(codex_shell(f"{work} && git rev-parse --abbrev-ref HEAD")),
            calls(codex_shell(f"cat {base}/data/runner.credential || echo CREDENTIAL=denied")),
            *read_comment_finish("Fixed."),
        ],
    )
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(base / "data"),
        "PAPERCLIP_PORT": str(free_port()),
        "PAPERCLIP_RUNNER_LAUNCH": json.dumps(
            {"codex": {"default": [str(codex_cli), "app-server"]}}
        ),
        "PAPERCLIP_RUNNER_MODELS": json.dumps(
            {
                "default": {
                    "endpoints": [model_endpoint.url],
                    "keys": [MODEL_KEY_VARIABLE],
                    "sandbox": ["danger-full-access"],
                }
            }
        ),
        "PAPERCLIP_RUNNER_WORKSPACE_ROOTS": str(repos),
        MODEL_KEY_VARIABLE: "scripted-dummy-key",
    }
    server = ServerProcess(env, base / "serve.log").start()
    try:
        api = server.api()
        # Connected first: the door knows which repositories a runner takes.
        wait_until(
            lambda: api.get("/health").json()["runners"]["connected_here"] == 1,
            WAIT,
            0.2,
            "a runner",
        )
        company = api.post("/companies", json={"name": "Worktree"}).json()["id"]
        agent = api.post(
            f"/companies/{company}/agents",
            json={
                "name": "fixer",
                "provider": "codex",
                "provider_config": real_agent_config(
                    model_endpoint, model, sandbox="danger-full-access"
                ),
            },
        ).json()
        project = api.post(
            f"/companies/{company}/projects",
            json={"name": "app", "repo_path": str(repo), "default_branch": "main"},
        )
        assert project.status_code == 201, project.text
        issue = api.post(
            f"/companies/{company}/issues",
            json={
                "title": "Fix it",
                "assignee_agent_id": agent["id"],
                "project_id": project.json()["id"],
            },
        ).json()
        run = finished_run(api, company, issue["id"])
        assert run["status"] == "succeeded", (run["error_message"], server.tail())
        ws = api.get(f"/companies/{company}/issues/{issue['id']}/workspace").json()
    finally:
        server.stop()

    outputs = [
        str(o.get("output")) for r in model_endpoint.scripted(model) for o in r.tool_outputs()
    ]
    uid = str(pwd.getpwnam("paperclip-agent").pw_uid)
    branch = f"paperclip/{issue['identifier']}"
    assert any(f"{uid}\n{branch}" in output for output in outputs), outputs
    assert any("CREDENTIAL=denied" in output for output in outputs), outputs
    assert not any("pcrn_" in output for output in outputs), outputs
    assert git(repo, "log", "--format=%s %an", "-1", branch) == "Fix it fixer"
    assert git(repo, "rev-parse", "main") == main
    assert (ws["work_product"]["ahead"], ws["work_product"]["dirty"]) == (1, False), ws
