"""An issue's worktree: made on its branch from the base, then kept and reused as it is.

Real repositories in ``tmp_path``, real git; no database.
"""

from __future__ import annotations

import asyncio
import stat

from paperclip.runner.workspaces.worktrees import Workspaces
from tests.support.git_repos import (
    add_hook,
    commit,
    git,
    make_bare,
    make_repo,
    spec_for,
    worktrees,
)


async def test_a_worktree_is_made_on_the_issue_branch_from_the_default_branch(workspaces, repo):
    main_before = git(repo, "rev-parse", "main")

    ready = await workspaces.ensure(spec_for(repo))

    assert ready.created
    assert ready.path == workspaces.root / "c1" / "ACM-1"
    assert (ready.branch, ready.base_ref) == ("paperclip/ACM-1", "main")
    assert ready.base_commit == ready.head == main_before
    assert git(ready.path, "symbolic-ref", "--short", "HEAD") == "paperclip/ACM-1"
    assert (ready.path / "a.txt").read_text() == "one\ntwo\nthree\n"
    # The agent's commit goes to the issue's branch; the default branch and the
    # repository's own checkout stay where they were.
    made = commit(ready.path, {"a.txt": "changed\n"})
    assert git(repo, "rev-parse", "paperclip/ACM-1") == made
    assert git(repo, "rev-parse", "main") == main_before
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"


async def test_a_second_ensure_reuses_the_worktree_and_keeps_an_uncommitted_edit(workspaces, repo):
    first = await workspaces.ensure(spec_for(repo))
    (first.path / "a.txt").write_text("edited, not committed\n")
    (first.path / "notes.txt").write_text("untracked\n")

    again = await workspaces.ensure(spec_for(repo))

    assert not again.created
    assert again.path == first.path
    assert (again.path / "a.txt").read_text() == "edited, not committed\n"
    assert (again.path / "notes.txt").read_text() == "untracked\n"
    assert [w["worktree"] for w in worktrees(repo)].count(str(first.path)) == 1


async def test_two_issues_in_parallel_get_two_worktrees_with_no_cross_talk(workspaces, repo):
    one, two = await asyncio.gather(
        workspaces.ensure(spec_for(repo, "ACM-1")), workspaces.ensure(spec_for(repo, "ACM-2"))
    )

    assert one.path != two.path and one.created and two.created
    commit(one.path, {"only-one.txt": "1\n"})
    (two.path / "b.txt").write_text("two's edit\n")
    assert not (two.path / "only-one.txt").exists()
    assert (one.path / "b.txt").read_text() == "bee\n"
    branches = {w["worktree"]: w.get("branch") for w in worktrees(repo)}
    assert branches[str(one.path)] == "refs/heads/paperclip/ACM-1"
    assert branches[str(two.path)] == "refs/heads/paperclip/ACM-2"


async def test_a_branch_kept_from_a_released_worktree_is_reused_with_its_commits(workspaces, repo):
    first = await workspaces.ensure(spec_for(repo))
    work = commit(first.path, {"feature.txt": "done\n"})
    await workspaces.release(spec_for(repo))
    commit(repo, {"a.txt": "main moved on\n"})  # the base branch advances meanwhile

    again = await workspaces.ensure(spec_for(repo))

    assert again.created
    assert again.head == work
    assert (again.path / "feature.txt").read_text() == "done\n"
    # The base is where the branch left main, not where main is now.
    assert again.base_commit == first.base_commit


async def test_a_named_base_branch_and_a_recorded_base_commit_are_used(workspaces, repo):
    git(repo, "branch", "develop")
    commit(repo, {"a.txt": "on main only\n"})
    git(repo, "checkout", "--quiet", "develop")
    develop = commit(repo, {"dev.txt": "dev\n"})
    git(repo, "checkout", "--quiet", "main")

    ready = await workspaces.ensure(spec_for(repo, base_ref="develop"))

    assert (ready.base_ref, ready.base_commit, ready.head) == ("develop", develop, develop)
    # A recorded base commit stays the base even when the branch moved on.
    commit(ready.path, {"x.txt": "x\n"})
    again = await workspaces.ensure(spec_for(repo, base_ref="develop", base_commit=develop))
    assert again.base_commit == develop


async def test_a_folder_in_the_way_is_moved_aside_not_deleted(workspaces, repo):
    path = workspaces.path_of("c1/ACM-1")
    path.mkdir()
    (path / "precious.txt").write_text("someone's\n")

    ready = await workspaces.ensure(spec_for(repo))

    assert ready.created and (ready.path / ".git").is_file()
    kept = list(workspaces.orphaned.glob("*/c1/ACM-1/precious.txt"))
    assert [p.read_text() for p in kept] == ["someone's\n"]


async def test_a_worktree_whose_admin_link_is_stale_is_repaired_and_reused(workspaces, repo):
    ready = await workspaces.ensure(spec_for(repo))
    (ready.path / "wip.txt").write_text("in progress\n")
    admin = git(ready.path, "rev-parse", "--path-format=absolute", "--git-dir")
    (workspaces.work_dir / "gitdir").write_text("/nowhere/.git\n")
    (workspaces.work_dir / "gitdir").replace(f"{admin}/gitdir")  # as after a rename

    again = await workspaces.ensure(spec_for(repo))

    assert not again.created
    assert (again.path / "wip.txt").read_text() == "in progress\n"
    assert str(ready.path) in [w["worktree"] for w in worktrees(repo)]


async def test_a_clone_url_is_mirrored_and_fetched_before_each_new_worktree(
    workspaces, remotes, tmp_path
):
    origin = make_repo(tmp_path / "upstream", {"a.txt": "first\n"})
    bare = make_bare(origin, remotes / "app.git")
    url = f"file://{bare}"

    ready = await workspaces.ensure(spec_for(url))

    mirrors = list(workspaces.mirrors.glob("*.git"))
    assert len(mirrors) == 1 and git(mirrors[0], "rev-parse", "--is-bare-repository") == "true"
    assert (ready.path / "a.txt").read_text() == "first\n"
    # Not a push mirror any more: an agent's `git push` pushes one branch, never every ref.
    assert git(mirrors[0], "config", "--get", "remote.origin.mirror", check=False) == ""
    assert list(workspaces.mirrors.glob(".tmp-*")) == []

    second = commit(origin, {"a.txt": "second\n"})
    git(origin, "push", "--quiet", str(bare), f"{second}:refs/heads/main")
    newer = await workspaces.ensure(spec_for(url, "ACM-2"))
    kept = await workspaces.ensure(spec_for(url))

    assert newer.base_commit == git(bare, "rev-parse", "main")
    assert (newer.path / "a.txt").read_text() == "second\n"
    assert not kept.created and (kept.path / "a.txt").read_text() == "first\n"


async def test_hooks_run_only_when_the_project_enables_them(workspaces, repo, tmp_path):
    marker = tmp_path / "post-checkout-ran"
    add_hook(repo, "post-checkout", f"touch '{marker}'")

    await workspaces.ensure(spec_for(repo, "ACM-1"))
    assert not marker.exists()

    await workspaces.ensure(spec_for(repo, "ACM-2", hooks=True))
    assert marker.exists()


async def test_worktrees_and_the_folders_above_them_are_private(workspaces: Workspaces, repo):
    ready = await workspaces.ensure(spec_for(repo))

    folder = ready.path
    while folder != workspaces.work_dir:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
        folder = folder.parent
    for private in (workspaces.staging, workspaces.locks, workspaces.mirrors, workspaces.home):
        assert stat.S_IMODE(private.stat().st_mode) == 0o700, private
