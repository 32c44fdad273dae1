"""Making and releasing a worktree survive a SIGKILL at every step; a worktree has one writer.

Each crash is a real process (``sys.executable -c``) killed by a named
failpoint; the next call, in this process, finds exactly one worktree of the
key, on its branch, and nothing half-made left over.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from paperclip.runner.workspaces.errors import WorkspaceError
from paperclip.runner.workspaces.worktrees import Workspaces
from tests.support.git_repos import git, make_bare, make_repo, spec_for, worktrees

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import asyncio, json, sys
from paperclip.runner.workspaces.policy import WorkspacePolicy
from paperclip.runner.workspaces.worktrees import Workspaces
from paperclip.wire.messages import WorkspaceSpec

work_dir, roots, remotes, action, spec = json.loads(sys.argv[1])
workspaces = Workspaces(work_dir, WorkspacePolicy.build(roots, remotes))
spec = WorkspaceSpec(**spec)
if action == "hold":
    with workspaces.lock(spec.key):
        print("held", flush=True)
        sys.stdin.read()
else:
    print(asyncio.run(getattr(workspaces, action)(spec)), flush=True)
"""


def in_process(workspaces: Workspaces, action: str, spec, **popen) -> subprocess.Popen[str]:
    """``workspaces.<action>(spec)`` in a new Python process."""
    policy = workspaces.policy
    argument = [
        str(workspaces.work_dir),
        [str(root) for root in policy.roots],
        list(policy.remotes),
        action,
        {f: getattr(spec, f) for f in spec.__struct_fields__},
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **popen.pop("env", {})}
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, json.dumps(argument)],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )


def killed_at(workspaces: Workspaces, action: str, spec, point: str) -> None:
    proc = in_process(workspaces, action, spec, env={"PAPERCLIP_FAILPOINTS": f"{point}=kill"})
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, stderr
    assert f"failpoint {point} fired" in stderr


def index_of(path: Path) -> bytes:
    return Path(
        git(path, "rev-parse", "--path-format=absolute", "--git-path", "index")
    ).read_bytes()


def only_worktree(workspaces: Workspaces, source: Path, key: str) -> dict[str, str]:
    """The one worktree of ``key`` in ``source``; nothing half-made anywhere."""
    path = str(workspaces.path_of(key))
    listed = worktrees(source)
    assert [w["worktree"] for w in listed].count(path) == 1, listed
    assert not [w for w in listed if str(workspaces.staging) in w["worktree"]], listed
    assert list(workspaces.staging.iterdir()) == []
    return next(w for w in listed if w["worktree"] == path)


@pytest.mark.parametrize(
    "point",
    ["runner.workspace.after_branch", "runner.workspace.after_add", "runner.workspace.after_move"],
)
async def test_a_kill_at_each_step_of_making_a_worktree_leaves_one_worktree(
    workspaces, repo, point
):
    spec = spec_for(repo)
    killed_at(workspaces, "ensure", spec, point)
    # What the kill left: a branch, then a worktree being made, then one moved into place
    # that git still knows by its staging folder.
    assert git(repo, "rev-parse", "--verify", "--quiet", "paperclip/ACM-1", check=False)
    staged = [w for w in worktrees(repo) if str(workspaces.staging) in w["worktree"]]
    assert len(staged) == (point != "runner.workspace.after_branch")
    assert workspaces.path_of(spec.key).exists() == (point == "runner.workspace.after_move")

    # Another issue of the repository first: its `git worktree prune` keeps what the kill left.
    await workspaces.ensure(spec_for(repo, "ACM-2"))
    ready = await workspaces.ensure(spec)

    assert ready.created == (point != "runner.workspace.after_move")
    entry = only_worktree(workspaces, repo, spec.key)
    assert entry["branch"] == "refs/heads/paperclip/ACM-1"
    assert ready.base_commit == git(repo, "rev-parse", "main")
    assert (ready.path / "a.txt").read_text() == "one\ntwo\nthree\n"
    again = await workspaces.ensure(spec)
    assert not again.created
    only_worktree(workspaces, repo, spec.key)


async def test_a_kill_while_cloning_a_mirror_leaves_no_half_mirror(workspaces, remotes, tmp_path):
    bare = make_bare(make_repo(tmp_path / "up", {"a.txt": "up\n"}), remotes / "app.git")
    spec = spec_for(f"file://{bare}")
    killed_at(workspaces, "ensure", spec, "runner.workspace.mirror.after_clone")
    assert list(workspaces.mirrors.glob("*.git")) == []  # only the temporary folder was made

    ready = await workspaces.ensure(spec)

    (mirror,) = workspaces.mirrors.glob("*.git")
    assert [p.name for p in workspaces.mirrors.iterdir()] == [mirror.name]
    only_worktree(workspaces, mirror, spec.key)
    assert (ready.path / "a.txt").read_text() == "up\n"


async def test_a_kill_between_saving_and_removing_saves_no_second_ref(workspaces, repo):
    spec = spec_for(repo)
    ready = await workspaces.ensure(spec)
    (ready.path / "b.txt").write_text("uncommitted\n")
    index_before, head_before = index_of(ready.path), git(repo, "rev-parse", "paperclip/ACM-1")

    killed_at(workspaces, "release", spec, "runner.workspace.release.after_save")

    # Saved, and nothing of the worktree touched: its files, index and branch as they were.
    saved = git(repo, "for-each-ref", "--format=%(refname)", "refs/paperclip/saved/").split()
    assert len(saved) == 1
    assert (ready.path / "b.txt").read_text() == "uncommitted\n"
    assert index_of(ready.path) == index_before
    assert git(repo, "rev-parse", "paperclip/ACM-1") == head_before
    assert git(ready.path, "diff", "--name-only") == "b.txt"
    assert git(ready.path, "diff", "--cached", "--name-only") == ""

    released = await workspaces.release(spec)

    assert released.saved_ref == saved[0] and released.removed
    assert (
        git(repo, "for-each-ref", "--format=%(refname)", "refs/paperclip/saved/").split() == saved
    )
    assert not ready.path.exists()


def test_a_second_lock_of_a_key_is_busy_in_this_process_and_from_another(workspaces, repo):
    spec = spec_for(repo)
    with workspaces.lock(spec.key):
        with pytest.raises(WorkspaceError) as caught, workspaces.lock(spec.key):
            pass
        assert caught.value.code == "workspace_busy"
        # A process started meanwhile does not inherit the lock.
        child = subprocess.Popen(["sleep", "60"], close_fds=False)
    try:
        with workspaces.lock(spec.key):
            pass
        with workspaces.lock("c1/ACM-2"):  # another key is another lock
            pass

        holder = in_process(workspaces, "hold", spec, stdin=subprocess.PIPE)
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(WorkspaceError) as caught, workspaces.lock(spec.key):
            pass
        assert caught.value.code == "workspace_busy"
        assert "in use by another run" in caught.value.message
        holder.communicate("", timeout=30)
        with workspaces.lock(spec.key):  # free once its holder is gone
            pass
    finally:
        child.kill()
        child.wait()
