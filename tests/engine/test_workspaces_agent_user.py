"""As root, an issue's run in its worktree runs as the agent's user: real processes, real git.

The control plane, the runner (root) and the fake Codex app-server are separate OS
processes; the runner starts the fake as ``paperclip-agent``, with a Python that user may
run. The fake's shell steps print ``id -u``, commit on the issue's branch, and probe what an
agent must not reach (the runner's folders, its environment, the database's socket).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from paperclip.operator_token import TOKEN_FILE
from tests.engine.conftest import FAKE_PROFILE, Stack
from tests.engine.test_workspaces import (
    COMMITTER,
    FINISH,
    comment,
    connected,
    escalated,
    in_project,
    shell_outputs,
    workspace,
)
from tests.support.git_repos import git, make_repo
from tests.support.processes import wait_until

pytestmark = [
    pytest.mark.process,
    pytest.mark.installed_plugins,
    pytest.mark.skipif(os.geteuid() != 0, reason="a second Unix user is made by root"),
]

CHECKOUT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture
def open_stack(paperclip_database_url):
    """A stack in a folder every user may pass through (pytest's are closed to all but
    root); its runner's work dir is closed, as a data dir's is."""
    base = Path(tempfile.mkdtemp(prefix="pc-agent-ws-", dir="/var/tmp"))
    base.chmod(0o755)
    (base / "runner").mkdir(mode=0o700)
    stack = Stack(database_url=paperclip_database_url, tmp=base)
    yield stack
    stack.stop()
    shutil.rmtree(base, ignore_errors=True)


def fake_as(python: str, stack: Stack, *prefix: str) -> dict:
    """Launch profiles offering the fake, started with ``python`` (after ``prefix``)."""
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    argv = [*prefix, python, "-m", "paperclip_codex_testing.fake_app_server"]
    return {"codex": {FAKE_PROFILE: [*argv, "--script-dir", str(stack.script_dir)]}}


def checkout_path() -> str:
    """This checkout's packages (the virtual environment's and the plugins' own folders),
    for a Python outside it."""
    return os.pathsep.join(p for p in sys.path if p.startswith(str(CHECKOUT)))


@pytest.mark.skipif(not os.path.exists(SYSTEM_PYTHON), reason="no system Python to share")
def test_a_worktree_run_is_the_agents_user_who_commits_and_the_next_wake_sees_it(
    open_stack, paperclip_database_url
):
    stack = open_stack
    repos = stack.tmp / "repos"
    base = git(make_repo(repos / "app"), "rev-parse", "HEAD")
    stack.start_server()
    runner = stack.start_runner(
        fake_as(SYSTEM_PYTHON, stack),
        env={"PAPERCLIP_RUNNER_WORKSPACE_ROOTS": str(repos), "PYTHONPATH": checkout_path()},
    )
    connected(stack)
    url = make_url(paperclip_database_url)
    socket = f"{url.query.get('host')}/.s.PGSQL.{url.port or 5432}"
    assert runner.proc is not None
    token = stack.tmp / "cp0" / TOKEN_FILE  # the operator's, in the data dir
    probe = " ; ".join(
        [
            f"ls {stack.runner_folder} >/dev/null 2>&1 && echo RUNNER=listed || echo RUNNER=denied",
            f"cat {token} >/dev/null 2>&1 && echo TOKEN=read || echo TOKEN=denied",
            f"cat /proc/{runner.proc.pid}/environ >/dev/null 2>&1 && echo ENV=read "
            "|| echo ENV=denied",
            f'{SYSTEM_PYTHON} -c "import socket; s = socket.socket(socket.AF_UNIX); '
            f"s.connect('{socket}')\" 2>/dev/null && echo SOCKET=connected || echo SOCKET=denied",
            "env | grep -c PAPERCLIP_RUNNER | sed s/^/LEAKS=/",
        ]
    )
    commit = (
        "id -u && printf 'hello\\n' > notes.txt && git add notes.txt"
        " && git commit -qm 'Add notes' && git rev-parse --abbrev-ref HEAD"
    )
    ctx = stack.setup_issue(
        {"turns": [[escalated(commit), escalated(probe), FINISH]]}, extra_config=COMMITTER
    )
    in_project(stack, ctx, repos / "app", default_branch="main")
    stack.assign(ctx)

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    agent = pwd.getpwnam("paperclip-agent")
    branch = f"paperclip/{ctx['issue']['identifier']}"
    committed, probed = shell_outputs(stack, ctx, run["id"])
    assert committed == f"{agent.pw_uid}\n{branch}\n", committed
    found = dict(line.split("=", 1) for line in probed.splitlines() if "=" in line)
    assert found == {
        "RUNNER": "denied",
        "TOKEN": "denied",
        "ENV": "denied",
        "SOCKET": "denied",
        "LEAKS": "0",
    }, probed
    assert token.read_text().strip()  # really there, for the runner's user
    assert git(repos / "app", "log", "--format=%s", branch) == "Add notes\ninitial"
    assert git(repos / "app", "rev-parse", "main") == base
    ws = workspace(stack, ctx)
    assert (ws["work_product"]["ahead"], ws["work_product"]["dirty"]) == (1, False)
    assert (Path(ws["path"]) / "notes.txt").stat().st_uid == agent.pw_uid
    assert (Path(ws["path"]) / ".git").stat().st_uid == 0  # the runner's: its git reads it

    # The next wake works in the same worktree, as the same user, and finds the commit.
    stack.rewrite_script(
        ctx, {"turns": [[escalated("id -u && git log --format=%s -1 && cat notes.txt"), FINISH]]}
    )
    comment(stack, ctx, "Look again, please.")
    second = wait_until(
        lambda: next(
            (r for r in stack.runs(ctx) if r["id"] != run["id"] and r["status"] == "succeeded"),
            None,
        ),
        90,
        message="the second run",
    )
    assert shell_outputs(stack, ctx, second["id"]) == [f"{agent.pw_uid}\nAdd notes\nhello\n"]


def test_a_launch_through_env_of_a_python_the_agent_cannot_run_keeps_the_runners_user(
    open_stack,
):
    stack = open_stack
    python = os.path.realpath(sys.executable)
    if not any(os.stat(p).st_mode & 0o001 == 0 for p in Path(python).parents):
        pytest.skip(f"{python} is reachable by every user here")
    stack.start_server()
    stack.start_runner(
        fake_as(sys.executable, stack, "env", "PAPERCLIP_FAKE=1"),
        env={"PAPERCLIP_LOG_FORMAT": "json"},
    )
    connected(stack)
    ctx = stack.setup_issue({"turns": [[escalated("id -u"), FINISH]]}, extra_config=COMMITTER)
    stack.assign(ctx)

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    assert shell_outputs(stack, ctx, run["id"]) == ["0\n"]
    said = [
        json.loads(line)["message"]
        for line in stack.runner.tail(200).splitlines()
        if line.startswith("{")
    ]
    closed = next(p for p in reversed(Path(python).parents) if not os.stat(p).st_mode & 1)
    assert [m for m in said if "run as this runner's user" in m] == [
        f"provider processes run as this runner's user, not paperclip-agent: {python}: the "
        f"folder {closed} is closed to paperclip-agent"
    ], said


def test_the_same_launch_is_refused_when_the_host_named_the_agents_user(open_stack):
    stack = open_stack
    python = os.path.realpath(sys.executable)
    if not any(os.stat(p).st_mode & 0o001 == 0 for p in Path(python).parents):
        pytest.skip(f"{python} is reachable by every user here")
    stack.start_server()
    stack.start_runner(
        fake_as(sys.executable, stack, "env", "PAPERCLIP_FAKE=1"),
        env={"PAPERCLIP_RUNNER_AGENT_USER": "paperclip-agent"},
    )
    connected(stack)
    ctx = stack.setup_issue({"turns": [[escalated("id -u"), FINISH]]}, extra_config=COMMITTER)
    stack.assign(ctx)

    run = stack.wait_for_terminal_run(ctx)
    assert (run["status"], run["error_code"]) == ("failed", "agent_user_unavailable"), run
    assert python in run["error_message"] and "paperclip-agent" in run["error_message"], run
    assert shell_outputs(stack, ctx, run["id"]) == []  # nothing started
