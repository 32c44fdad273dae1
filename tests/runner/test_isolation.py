"""Who a provider process runs as and what it sees, decided by the runner (no server needed)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from paperclip_hookspecs.providers import ProcessUser

from paperclip.runner.isolation import (
    AGENT_USER,
    ALLOWED_ENV,
    AgentUser,
    IsolationError,
    process_env,
    unreachable_program,
)

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")


@pytest.fixture
def open_dir():
    """A folder every user may pass through (pytest's own are closed to all but root)."""
    folder = Path(tempfile.mkdtemp(prefix="pc-isolation-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_environment_is_the_allowlist_the_granted_key_and_the_runs_own(monkeypatch):
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("GRANTED_API_KEY", "granted")
    monkeypatch.setenv("OTHER_API_KEY", "another profile's")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the host's")
    monkeypatch.setenv("PAPERCLIP_RUNNER_CREDENTIAL", "pcrn_secret")
    monkeypatch.setenv("PAPERCLIP_API_KEY", "pck_secret")
    env = process_env(
        ["GRANTED_API_KEY", "PAPERCLIP_API_KEY"],
        {"GIT_AUTHOR_NAME": "coder"},
        "/runs/x/home",
        ProcessUser(uid=12345, gid=12345, name="agent"),
    )
    assert env == {
        "PATH": "/usr/bin:/bin",
        "LC_ALL": "C.UTF-8",
        "GRANTED_API_KEY": "granted",
        "GIT_AUTHOR_NAME": "coder",
        "HOME": "/runs/x/home",
        "USER": "agent",
        "LOGNAME": "agent",
        **{k: v for k, v in os.environ.items() if k in ALLOWED_ENV and k != "PATH"},
    }


@root_only
def test_as_root_the_agent_user_is_made_and_never_root_nor_the_databases(open_dir):
    agents = AgentUser.choose(None)
    assert agents.user is not None and agents.user.name == AGENT_USER and agents.user.uid != 0
    assert AgentUser.choose("root").user is None
    with pytest.raises(IsolationError, match="database"):
        AgentUser.choose("pgserver")
    with pytest.raises(IsolationError, match="no such user"):
        AgentUser.choose("no-such-user-here")

    # Its home and working folder are the agent's, 0700; the run's folder stays the runner's
    # (its records, the drivers' own files), passable only.
    run = open_dir / "run"
    user, env, work = agents.prepare(["/usr/bin/env"], run, [], {}, worktree=False)
    assert user == agents.user and work == run / "work"
    for folder in (run / "home", work):
        info = folder.stat()
        assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o700, agents.user.uid)
    assert (stat.S_IMODE(run.stat().st_mode), run.stat().st_uid) == (0o701, 0)
    assert env["HOME"] == str(run / "home") and env["USER"] == AGENT_USER
    # A worktree run is the agent's too (the worktree is shared with it), unless its
    # repository lies where that user cannot go: then it says why and keeps the runner's.
    assert agents.prepare(["/usr/bin/env"], run, [], {}, worktree=[open_dir])[0] == agents.user
    closed = open_dir / "closed"
    (closed / "repo").mkdir(parents=True)
    closed.chmod(0o700)
    assert agents.prepare(["/usr/bin/env"], run, [], {}, worktree=[closed / "repo"])[0] is None
    assert any(str(closed) in said for said in agents.said)


@root_only
def test_giving_a_folder_never_follows_a_link_the_agent_put_there(open_dir):
    agents = AgentUser.choose(None)
    assert agents.user is not None
    target = open_dir / "operator"
    target.mkdir()
    (target / "secret").write_text("x")
    home = open_dir / "home"
    home.mkdir()
    (home / "link").symlink_to(target)
    agents.user.give(str(home))
    assert (home / "link").lstat().st_uid == agents.user.uid
    assert target.stat().st_uid == 0 and (target / "secret").stat().st_uid == 0
    with pytest.raises(OSError, match="symbolic link"):
        agents.user.give(str(home / "link"))


@root_only
def test_a_program_the_agent_user_cannot_reach_falls_back_only_for_the_default_user(open_dir):
    agents = AgentUser.choose(None)
    assert agents.user is not None
    closed = open_dir / "closed"
    closed.mkdir(mode=0o700)
    program = closed / "provider"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert "closed to" in (unreachable_program([str(program)], agents.user) or "")
    assert unreachable_program(["/bin/sh"], agents.user) is None
    # Not a program (a gateway's profile is a URL), or missing for everyone: not its business.
    assert unreachable_program(["ws://127.0.0.1:18789", "--token-env", "T"], agents.user) is None
    assert unreachable_program(["no-such-program-anywhere"], agents.user) is None
    run = open_dir / "run"
    assert agents.for_run([str(program)], run)[0] is None
    strict = AgentUser.choose(AGENT_USER)
    assert strict.for_run([str(program)], run)[0] == strict.user
    assert agents.for_run(["/bin/sh"], run) == (agents.user, "")


@root_only
def test_every_program_a_launch_runs_is_checked_through_env_and_its_interpreter(open_dir):
    agents = AgentUser.choose(None)
    assert agents.user is not None
    closed = open_dir / "closed"
    closed.mkdir(mode=0o700)
    python = closed / "python"
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    shown = open_dir / "bin"
    shown.mkdir()
    script = shown / "provider"  # open itself, its interpreter closed
    script.write_text(f"#!/usr/bin/env -S {python} -u\n")
    script.chmod(0o755)

    for launch in (
        ["env", "X=1", str(python), "-m", "fake"],
        ["/usr/bin/env", "-i", "-u", "HOME", "--chdir", "/tmp", "--", str(python)],
        ["env", f"PATH={closed}:/usr/bin", "python", "-m", "fake"],
        ["env", "-S", f"X=1 {python} -m fake"],
        [str(script)],
        ["env", str(script)],
    ):
        problem = unreachable_program(launch, agents.user)
        assert problem is not None and "closed to" in problem, launch
        assert str(closed) in problem, launch
    # What it can run passes, through env or not.
    for launch in (["env", "X=1", "/bin/sh", "-c", "true"], ["env"], ["env", "-i", "sh"]):
        assert unreachable_program(launch, agents.user) is None, launch
    run = open_dir / "run"
    assert agents.for_run(["env", "X=1", str(python)], run)[0] is None  # falls back
    strict = AgentUser.choose(AGENT_USER)  # named by the host: refused, saying why
    with pytest.raises(IsolationError, match=f"cannot start as {AGENT_USER}: .*{closed}") as err:
        strict.prepare(["env", "X=1", str(python)], run, [], {})
    assert err.value.code == "agent_user_unavailable"


def test_the_hosts_proxy_settings_reach_the_provider_in_both_spellings(monkeypatch):
    proxies = {
        "HTTPS_PROXY": "http://proxy.internal:3128",
        "https_proxy": "http://proxy.internal:3128",
        "HTTP_PROXY": "http://proxy.internal:3128",
        "http_proxy": "http://proxy.internal:3128",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    for name, value in proxies.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ALL_PROXY_PASSWORD", "not a proxy setting")
    env = process_env([], {}, "/runs/x/home", None)
    assert {k: v for k, v in env.items() if k.lower().endswith("proxy")} == proxies
    assert "ALL_PROXY_PASSWORD" not in env
