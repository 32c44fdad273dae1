"""How git runs: the runner's own git with a fixed environment, the agent's with ours laid on."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from paperclip.runner.workspaces.errors import WorkspaceError, quote, scrub
from paperclip.runner.workspaces.git import agent_slug, provider_git_env, run_git
from tests.support.git_repos import add_hook, git, spec_for
from tests.support.processes import wait_until


def agent_commit(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``git commit`` in ``path`` as a provider process would run it: our variables only,
    no identity of its own."""
    (path / "agent.txt").write_text("by the agent\n")
    base = {
        "PATH": os.environ["PATH"],
        "HOME": str(path.parent),
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    subprocess.run(["git", "add", "agent.txt"], cwd=path, env={**base, **env}, check=True)
    return subprocess.run(
        ["git", "commit", "-m", "agent work"],
        cwd=path,
        env={**base, **env},
        capture_output=True,
        text=True,
    )


async def test_the_agents_commit_skips_hooks_and_is_authored_as_the_agent(workspaces, repo):
    add_hook(repo, "pre-commit", "echo 'refused by the hook' >&2; exit 1")
    ready = await workspaces.ensure(spec_for(repo))

    done = agent_commit(ready.path, provider_git_env(False, "Ada  Lovelace"))

    assert done.returncode == 0, done.stderr
    assert git(ready.path, "log", "-1", "--format=%an <%ae>|%cn <%ce>") == (
        "Ada Lovelace <ada-lovelace@agents.paperclip.invalid>|"
        "Ada Lovelace <ada-lovelace@agents.paperclip.invalid>"
    )


async def test_a_project_that_enables_hooks_gets_them_in_the_agents_commits(workspaces, repo):
    add_hook(repo, "pre-commit", "echo 'refused by the hook' >&2; exit 1")
    ready = await workspaces.ensure(spec_for(repo, hooks=True))

    done = agent_commit(ready.path, provider_git_env(True, "Ada"))

    assert done.returncode != 0 and "refused by the hook" in done.stderr


def test_the_agents_git_reads_no_system_configuration():
    env = provider_git_env(False, "Ada")

    assert env["GIT_CONFIG_NOSYSTEM"] == "1"
    pairs = {
        env[f"GIT_CONFIG_KEY_{n}"]: env[f"GIT_CONFIG_VALUE_{n}"]
        for n in range(int(env["GIT_CONFIG_COUNT"]))
    }
    assert pairs == {
        "core.hooksPath": "/dev/null",
        "protocol.ext.allow": "never",
        "core.fsmonitor": "false",
    }
    assert "core.hooksPath" not in provider_git_env(True, "Ada").values()
    assert agent_slug("Ünïcode Bot #7!") == "unicode-bot-7"
    assert agent_slug("***") == "agent"


async def test_the_runners_git_inherits_no_configuration_and_no_git_variables(
    tmp_path, monkeypatch, repo
):
    home = tmp_path / "empty-home"
    home.mkdir()
    # An operator's configuration and variables the runner's git must not see.
    (tmp_path / "global").write_text("[user]\n\tname = Operator\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "global"))
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    outside = tmp_path / "not-a-repository"
    outside.mkdir()

    listed = await run_git(["config", "--list", "--show-origin"], home=home, cwd=outside)
    found = await run_git(["rev-parse", "--git-dir"], home=home, cwd=outside, check=False)

    assert "Operator" not in listed.text
    assert "command line:" in listed.text and "core.hookspath=/dev/null" in listed.text
    assert found.returncode != 0 and "not a git repository" in found.stderr


def test_messages_never_show_credentials_and_quote_only_the_end_of_git_stderr():
    said = "\n".join(f"line {n}" for n in range(20))
    said += "\nfatal: unable to access 'https://bot:t0ken@git.example.com/x.git/'"

    quoted = quote(said)

    assert "t0ken" not in quoted and "https://***@git.example.com/x.git/" in quoted
    assert "line 0" not in quoted and "line 19" in quoted
    assert scrub("ssh://git@host/x and https://u:p@h/") == "ssh://***@host/x and https://***@h/"


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie waiting for its reaper counts)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


async def test_a_git_command_past_its_time_limit_is_stopped_with_its_helpers(tmp_path):
    pid_file = tmp_path / "ssh.pid"
    # A hanging ssh; `#` comments out the host and command git appends.
    slow_ssh = f"echo $$ > '{pid_file}' && exec sleep 60 #"

    started = time.monotonic()
    with pytest.raises(WorkspaceError) as caught:
        await run_git(
            ["ls-remote", "ssh://git.example.invalid/acme/app.git"],
            home=tmp_path,
            env={"GIT_SSH_COMMAND": slow_ssh},
            time_limit=1.5,
        )

    assert caught.value.code == "workspace_unavailable"
    assert "took longer than" in caught.value.message
    assert time.monotonic() - started < 20  # not held up by the helper's open pipes
    # Its whole process group went with it: the helper it started too.
    helper = int(pid_file.read_text())
    wait_until(lambda: gone(helper), timeout=10, message="the ssh helper to end")
