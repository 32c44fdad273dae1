"""A worktree's work product (state, files, a bounded diff) and its release (changes saved first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperclip.runner.workspaces.errors import WorkspaceError
from paperclip.runner.workspaces.report import cut
from paperclip.wire.messages import FileChange
from tests.support.git_repos import commit, git, spec_for, worktrees


@pytest.fixture
async def worked(workspaces, repo):
    """A worktree with a commit ahead, an uncommitted modification and an untracked file."""
    ready = await workspaces.ensure(spec_for(repo))
    commit(ready.path, {"a.txt": "one\ntwo\nthree\nfour\n"}, "add a line")
    (ready.path / "b.txt").write_text("bea\nand\n")
    (ready.path / "c.txt").write_text("new\nfile\n")
    common = Path(git(ready.path, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    (common / "info").mkdir(exist_ok=True)
    (common / "info" / "exclude").write_text("*.log\n")
    (ready.path / "ignored.log").write_text("noise\n")
    return ready


def index_of(path: Path) -> bytes:
    return Path(
        git(path, "rev-parse", "--path-format=absolute", "--git-path", "index")
    ).read_bytes()


async def test_the_report_counts_commits_ahead_changes_and_untracked_files(workspaces, worked):
    index_before = index_of(worked.path)

    state, diff, truncated = await workspaces.report(worked)

    assert state.head == git(worked.path, "rev-parse", "HEAD")
    assert (state.branch, state.base_ref, state.base_commit) == (
        "paperclip/ACM-1",
        "main",
        worked.base_commit,
    )
    assert state.ahead == 1
    assert state.files == [
        FileChange(path="a.txt", status="M", added=1, deleted=0),
        FileChange(path="b.txt", status="M", added=2, deleted=1),
        FileChange(path="c.txt", status="?", added=2, deleted=0),
    ]
    assert (state.untracked, state.dirty, state.files_truncated) == (1, True, False)
    assert state.disk_bytes and state.disk_bytes > 0
    assert "+four" in diff and "-bee" in diff and "+++ b/c.txt" in diff and "+new" in diff
    assert "noise" not in diff and not truncated
    # Reading changed nothing: the untracked file is still untracked, the index as it was.
    assert index_of(worked.path) == index_before
    assert git(worked.path, "diff", "--cached", "--name-only") == ""
    assert git(worked.path, "ls-files", "--others", "--exclude-standard") == "c.txt"


async def test_the_report_of_a_spec_finds_the_worktree_and_its_base(workspaces, repo, worked):
    commit(repo, {"a.txt": "main moved\n"})  # the base branch moves on after the fork

    state, _, _ = await workspaces.report(spec_for(repo))

    assert state.base_commit == worked.base_commit and state.ahead == 1
    with pytest.raises(WorkspaceError) as caught:
        await workspaces.report(spec_for(repo, "ACM-404"))
    assert caught.value.code == "workspace_unavailable"


async def test_a_long_diff_is_cut_on_a_line_boundary(workspaces, worked):
    _, whole, _ = await workspaces.report(worked)

    _, diff, truncated = await workspaces.report(worked, diff_limit=120)

    assert truncated
    assert len(diff.encode()) <= 120 and diff.endswith("\n")
    assert whole.startswith(diff) and len(whole) > len(diff)
    assert cut(b"abc\ndef\n", 5) == ("abc\n", True)
    assert cut(b"abc\ndef\n", 8) == ("abc\ndef\n", False)
    assert cut(b"abcdef", 3) == ("", True)


async def test_the_file_list_is_bounded(workspaces, worked):
    for n in range(5):
        (worked.path / f"extra-{n}.txt").write_text("x\n")

    state, _, _ = await workspaces.report(worked, files_limit=3)

    assert len(state.files) == 3 and state.files_truncated and state.untracked == 6


async def test_release_saves_uncommitted_changes_then_removes_the_worktree(
    workspaces, repo, worked
):
    (worked.path / "staged.txt").write_text("staged\n")
    git(worked.path, "add", "staged.txt")
    tip = git(repo, "rev-parse", "paperclip/ACM-1")

    released = await workspaces.release(spec_for(repo))

    assert released.removed and released.saved_ref is not None
    assert released.saved_ref.startswith("refs/paperclip/saved/paperclip/ACM-1/")
    ref = released.saved_ref
    assert git(repo, "rev-parse", f"{ref}^") == tip  # on top of the branch's HEAD
    assert git(repo, "show", f"{ref}:b.txt") == "bea\nand"
    assert git(repo, "show", f"{ref}:c.txt") == "new\nfile"
    assert git(repo, "show", f"{ref}:staged.txt") == "staged"
    assert git(repo, "ls-tree", "--name-only", ref).split().count("ignored.log") == 0
    # The worktree is gone, its branch kept where it was.
    assert not worked.path.exists()
    assert str(worked.path) not in [w["worktree"] for w in worktrees(repo)]
    assert git(repo, "rev-parse", "paperclip/ACM-1") == tip

    again = await workspaces.release(spec_for(repo))

    assert (again.saved_ref, again.removed) == (None, True)
    assert len(git(repo, "for-each-ref", "refs/paperclip/saved/").splitlines()) == 1


async def test_a_clean_worktree_is_released_with_nothing_saved(workspaces, repo):
    ready = await workspaces.ensure(spec_for(repo))
    commit(ready.path, {"done.txt": "done\n"})

    released = await workspaces.release(spec_for(repo))

    assert (released.saved_ref, released.removed) == (None, True)
    assert git(repo, "for-each-ref", "refs/paperclip/") == ""
    assert git(repo, "show", "paperclip/ACM-1:done.txt") == "done"
