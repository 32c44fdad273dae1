"""A worktree's end: its uncommitted changes saved to a ref, then the worktree removed.

The save never touches the worktree's index, files or branch: the snapshot is
built in a temporary index (``GIT_INDEX_FILE``), written as a tree, committed on
top of HEAD with ``commit-tree`` and kept under
``refs/paperclip/saved/<branch>/<UTC timestamp>``. A save that a crash left
without its removal is found again by its tree and parent, so a second
release saves nothing twice.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from paperclip.runner.workspaces.git import GitResult

Git = Callable[..., Awaitable[GitResult]]
SAVED_REFS = "refs/paperclip/saved"
SAVER = {
    "GIT_AUTHOR_NAME": "Paperclip",
    "GIT_AUTHOR_EMAIL": "paperclip@paperclip.invalid",
    "GIT_COMMITTER_NAME": "Paperclip",
    "GIT_COMMITTER_EMAIL": "paperclip@paperclip.invalid",
}


async def save_uncommitted(
    git: Git, path: Path, branch: str, *, scratch: Path, now: datetime | None = None
) -> str | None:
    """The ref holding the worktree's uncommitted changes (tracked and untracked, not
    ignored) as a commit on top of HEAD; None when there are none."""
    status = await git(["status", "--porcelain", "-z", "--untracked-files=normal"], path)
    if not status.stdout:
        return None
    head = (await git(["rev-parse", "HEAD"], path)).text
    with tempfile.TemporaryDirectory(dir=scratch, prefix="save-") as temp:
        env = {"GIT_INDEX_FILE": str(Path(temp) / "index")}
        await git(["read-tree", head], path, env=env)
        await git(["add", "--all"], path, env=env)
        tree = (await git(["write-tree"], path, env=env)).text
    if tree == (await git(["rev-parse", f"{head}^{{tree}}"], path)).text:
        return None  # changes that add up to nothing (a file changed and changed back)
    prefix = f"{SAVED_REFS}/{branch}/"
    saved = await git(["for-each-ref", "--format=%(refname) %(tree) %(parent)", prefix], path)
    for line in saved.text.splitlines():
        ref, _, rest = line.partition(" ")
        if rest.split() == [tree, head]:
            return ref  # saved before a crash kept the worktree from being removed
    message = f"Uncommitted changes of {branch}, saved when its worktree was removed\n"
    commit = (
        await git(
            ["commit-tree", tree, "-p", head],
            path,
            env=SAVER,
            input=message.encode(),
        )
    ).text
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S.%fZ")
    ref = f"{prefix}{stamp}"
    # ``create`` refuses a ref that exists: a save never replaces another one.
    await git(["update-ref", "--stdin"], path, input=f"create {ref} {commit}\n".encode())
    return ref


async def remove_worktree(git: Git, source: Path, path: Path) -> None:
    """Remove the worktree at ``path`` of ``source`` (its branch stays)."""
    removed = await git(["worktree", "remove", "--force", "--", str(path)], source, check=False)
    if removed.returncode != 0:
        # Git keeps a worktree holding submodules; its changes are saved by now.
        await asyncio.to_thread(shutil.rmtree, path, ignore_errors=True)
    await git(["worktree", "prune"], source)
