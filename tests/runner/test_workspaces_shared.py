"""An issue's worktree shared with the agent's user: it edits and commits; the runner's own
git, config and folders stay out of its reach.

Real repositories under a folder every user may pass through, real git, the agent's git run
as ``paperclip-agent`` with the environment a provider gets; no database.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from paperclip.runner.isolation import AgentUser
from paperclip.runner.workspaces.git import provider_git_env
from paperclip.runner.workspaces.policy import WorkspacePolicy
from paperclip.runner.workspaces.worktrees import Workspaces
from tests.support.git_repos import git, make_bare, make_repo, spec_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a second Unix user needs root")


@pytest.fixture
def base():
    """A folder every user may pass through (pytest's own are closed to all but root)."""
    folder = Path(tempfile.mkdtemp(prefix="pc-shared-", dir="/var/tmp"))
    folder.chmod(0o755)
    (folder / "runner").mkdir(mode=0o700)  # as a runner's work dir is
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def agent():
    user = AgentUser.choose(None).user
    assert user is not None
    return user


def as_agent(agent, cwd: Path, script: str, worktree: Path) -> subprocess.CompletedProcess:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/nonexistent",
        **provider_git_env(False, "Coder", str(worktree)),
    }
    return subprocess.run(
        ["sh", "-c", script],
        cwd=cwd,
        env=env,
        user=agent.uid,
        group=agent.gid,
        extra_groups=[],
        capture_output=True,
        text=True,
        check=False,
    )


def denied(agent, worktree: Path, script: str) -> bool:
    return as_agent(agent, worktree, f"{script} 2>/dev/null", worktree).returncode != 0


async def test_the_agents_user_commits_in_its_worktree_and_reaches_no_git_settings(base, agent):
    repos = base / "repos"
    repo = make_repo(repos / "app", {"a.txt": "one\n"})
    workspaces = Workspaces(base / "runner", WorkspacePolicy.build([repos], []))
    ready = await workspaces.ensure(spec_for(repo), agent)

    done = as_agent(
        agent,
        ready.path,
        "echo two >> a.txt && mkdir -p src && echo new > src/b.txt && git add -A"
        " && git commit -qm 'By the agent' && id -u && git rev-parse --abbrev-ref HEAD",
        ready.path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(agent.uid), "paperclip/ACM-1"]
    assert git(repo, "log", "--format=%s %an", "-1", "paperclip/ACM-1") == "By the agent Coder"
    assert git(repo, "rev-parse", "main") == ready.base_commit  # only its branch moved

    # The runner's own git reads it without any override, and finds it as it was left.
    state, diff, _ = await workspaces.report(ready)
    assert (state.ahead, state.dirty) == (1, False), state
    assert "+two" in diff and "+new" in diff
    again = await workspaces.ensure(spec_for(repo), agent)
    assert not again.created and again.head == git(repo, "rev-parse", "paperclip/ACM-1")

    # What the runner's git reads as configuration, or runs, the agent cannot change.
    common, admin = repo / ".git", next((repo / ".git" / "worktrees").iterdir())
    for attempt in (
        "echo 'gitdir: /tmp/elsewhere' > .git",
        "rm -f .git",
        "mv .git moved",
        f"echo '[core] fsmonitor = /tmp/x' >> {common}/config",
        f"git config --file {common}/config core.pager /tmp/x",
        f"echo '#!/bin/sh' > {common}/hooks/post-commit",
        f"echo /tmp > {admin}/gitdir",
        f"rm -f {admin}/commondir",
        f"echo '[core] fsmonitor = /tmp/x' > {admin}/config.worktree",
        f"ls {base}/runner",
        f"ls {base}/runner/workspaces",
        f"touch {base}/runner/workspaces/c1/other",
    ):
        assert denied(agent, ready.path, attempt), attempt
    assert (ready.path / ".git").read_text().startswith("gitdir:")

    # Links the agent leaves are given as links: what they point to stays the host's.
    host = base / "host"
    (host / "folder").mkdir(parents=True)
    (host / "file").write_text("the host's\n")
    (host / "folder" / "inner").write_text("the host's\n")
    linked = as_agent(
        agent, ready.path, f"ln -s {host}/file f && ln -s {host}/folder d", ready.path
    )
    assert linked.returncode == 0, linked.stderr
    before = {
        path: path.stat() for path in (host / "file", host / "folder", host / "folder" / "inner")
    }
    await workspaces.ensure(spec_for(repo), agent)
    for path, was in before.items():
        now = path.stat()
        assert (now.st_uid, now.st_gid, now.st_mode) == (was.st_uid, was.st_gid, was.st_mode)
        assert now.st_uid == 0, path
    placeholder = admin / "config.worktree"
    assert (placeholder.stat().st_uid, placeholder.read_text()) == (0, "")

    # An uncommitted edit of the agent's is saved when the worktree goes.
    assert as_agent(agent, ready.path, "echo three >> a.txt", ready.path).returncode == 0
    released = await workspaces.release(spec_for(repo))
    assert released.removed and released.saved_ref is not None
    assert "three" in git(repo, "show", f"{released.saved_ref}:a.txt")


async def test_a_worktree_of_a_mirrored_url_is_shared_too(base, agent):
    remotes = base / "remotes"
    remote = make_bare(make_repo(base / "src" / "app", {"a.txt": "one\n"}), remotes / "app.git")
    workspaces = Workspaces(base / "runner", WorkspacePolicy.build([], [f"file://{remotes}/*"]))
    ready = await workspaces.ensure(spec_for(f"file://{remote}"), agent)
    done = as_agent(agent, ready.path, "echo two >> a.txt && git commit -qam Mirrored", ready.path)
    assert done.returncode == 0, done.stderr
    state, _, _ = await workspaces.report(ready)
    assert state.ahead == 1, state
    # A runner's user's own run there later, then the agent's again: its files are its own.
    (ready.path / "made-by-the-runner.txt").write_text("x\n")
    await workspaces.ensure(spec_for(f"file://{remote}"), agent)
    assert as_agent(agent, ready.path, "rm made-by-the-runner.txt", ready.path).returncode == 0


async def test_without_the_agents_user_the_worktree_stays_the_runners_alone(base):
    repos = base / "repos"
    repo = make_repo(repos / "app")
    workspaces = Workspaces(base / "runner", WorkspacePolicy.build([repos], []))
    ready = await workspaces.ensure(spec_for(repo))
    assert ready.path.stat().st_mode & 0o777 == 0o700
    assert git(repo, "config", "--default", "", "core.sharedRepository") == ""
