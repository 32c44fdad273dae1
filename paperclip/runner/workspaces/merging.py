"""An issue's branch merged into its base branch, in the host repository; a refusal changes nothing.

Run as the runner host's user (never the agent's), in the repository a project's
``repo_path`` names, by the caller holding the worktree's lock and the
repository's. Nothing is checked out to compute a merge:

- ``fast_forward``: only when the base branch is an ancestor of the branch's
  head; the base branch then points at that head.
- ``merge_commit``: ``git merge-tree --write-tree`` computes the merged tree
  without a working tree or an index (git 2.38 or later); a conflict is
  refused with the conflicting files, and nothing was written but unreachable
  objects. Otherwise ``git commit-tree`` makes the merge commit (parents: the
  base, then the branch's head).

The base branch then moves to the new commit. Where the base branch is checked
out (the repository's main working tree, or a linked one), the move is
``git merge --ff-only`` in that checkout, so its files and index follow; it is
refused when the checkout has uncommitted changes to a file the merge touches.
Elsewhere it is ``git update-ref`` with the old value as the expected one: a base
branch that moved meanwhile is read again and the merge computed again.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from paperclip.runner.workspaces.errors import WORKSPACE_BUSY, WorkspaceError, quote
from paperclip.runner.workspaces.folders import is_dir
from paperclip.runner.workspaces.git import GitResult
from paperclip.runner.workspaces.release import SAVER
from paperclip.wire.messages import MergeStrategy
from paperclip.wire.workspace_rules import (
    BASE_CHECKOUT_DIRTY,
    MERGE_CONFLICT,
    NOT_FAST_FORWARD,
    NOTHING_TO_MERGE,
    WORKSPACE_UNAVAILABLE,
)

Git = Callable[..., Awaitable[GitResult]]
ATTEMPTS = 3
"""How often a merge is computed again when the base branch moved while it was made."""
MAX_MESSAGE = 4000
MAX_LISTED = 200
"""Files named in a refusal, at most."""


class MergeRefused(Exception):
    """The merge was not made, and nothing changed: a code, a sentence, the files concerned."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        conflicts: Sequence[str] = (),
        files: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.conflicts = list(conflicts)[:MAX_LISTED]
        self.files = list(files)[:MAX_LISTED]


@dataclass(frozen=True, slots=True)
class Merged:
    commit: str
    """The base branch's commit now."""
    head: str
    """The branch's head that was merged."""
    base_before: str
    merged_commits: int


BeforeUpdate = Callable[[Merged], Awaitable[None]]
"""Called with the merge about to be made just before the base branch moves (to keep it)."""


class _BaseMoved(Exception):
    """The base branch moved while the merge was made: compute it again."""


async def merge_branch(
    git: Git,
    repo: Path,
    *,
    branch: str,
    base_ref: str,
    strategy: MergeStrategy,
    message: str,
    workspaces: Path,
    before_update: BeforeUpdate | None = None,
    earlier: Merged | None = None,
) -> Merged:
    """Merge ``branch`` into ``base_ref`` in ``repo``; raises :class:`MergeRefused` (nothing
    changed), ``WorkspaceError`` (the repository cannot be used), or ``GitFailed``.

    ``workspaces`` is the runner's worktrees folder: a base branch checked out in one of
    them (an issue's worktree) is not touched. ``earlier`` is a merge of the same request
    that was about to be made when its runner stopped: found on the base branch, it is the
    answer, and nothing is merged again."""
    if earlier is not None:
        tip = await commit_of(git, repo, f"refs/heads/{base_ref}")
        if tip is not None and await is_ancestor(git, repo, earlier.commit, tip):
            return earlier
    for _ in range(ATTEMPTS):
        try:
            return await _merge_once(
                git,
                repo,
                branch=branch,
                base_ref=base_ref,
                strategy=strategy,
                message=message,
                workspaces=workspaces,
                before_update=before_update,
            )
        except _BaseMoved:
            continue
    raise WorkspaceError(
        WORKSPACE_BUSY,
        f"the branch {base_ref} kept moving while {branch} was merged into it; try again",
    )


async def commit_of(git: Git, repo: Path, ref: str) -> str | None:
    """The commit ``ref`` names in ``repo``, or None."""
    found = await git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        repo,
        check=False,
    )
    return found.text if found.returncode == 0 and found.text else None


async def is_ancestor(git: Git, repo: Path, older: str, newer: str) -> bool:
    done = await git(["merge-base", "--is-ancestor", older, newer], repo, check=False)
    if done.returncode not in (0, 1):
        raise WorkspaceError(
            WORKSPACE_UNAVAILABLE, f"could not compare commits in {repo}: {quote(done.stderr)}"
        )
    return done.returncode == 0


async def _merge_once(
    git: Git,
    repo: Path,
    *,
    branch: str,
    base_ref: str,
    strategy: MergeStrategy,
    message: str,
    workspaces: Path,
    before_update: BeforeUpdate | None,
) -> Merged:
    head = await commit_of(git, repo, f"refs/heads/{branch}")
    if head is None:
        raise WorkspaceError(WORKSPACE_UNAVAILABLE, f"the branch {branch} does not exist in {repo}")
    base = await commit_of(git, repo, f"refs/heads/{base_ref}")
    if base is None:
        raise WorkspaceError(
            WORKSPACE_UNAVAILABLE, f"the base branch {base_ref} does not exist in {repo}"
        )
    if await is_ancestor(git, repo, head, base):
        raise MergeRefused(
            NOTHING_TO_MERGE,
            f"{branch} has no commit that {base_ref} does not have: there is nothing to merge",
        )
    count = int((await git(["rev-list", "--count", f"{base}..{head}"], repo)).text or 0)
    if strategy == "fast_forward":
        if not await is_ancestor(git, repo, base, head):
            behind = (await git(["rev-list", "--count", f"{head}..{base}"], repo)).text
            raise MergeRefused(
                NOT_FAST_FORWARD,
                f"{base_ref} has {behind} commit(s) that {branch} does not have, so it cannot "
                f"simply move to {branch}: set the project's merge strategy to merge_commit, "
                f"or rebase {branch} onto {base_ref}, then merge again",
            )
        new = head
    else:
        new = await _merge_commit(git, repo, branch, base_ref, base, head, message)
    checkout = await _checkout_of(git, repo, base_ref)
    if checkout is not None and _inside(checkout, workspaces):
        raise WorkspaceError(
            WORKSPACE_BUSY,
            f"the base branch {base_ref} is checked out in an issue's worktree ({checkout}); "
            "it is not merged into there",
        )
    if checkout is not None:
        await _check_checkout(git, checkout, base_ref, base, new)
    merged = Merged(commit=new, head=head, base_before=base, merged_commits=count)
    if before_update is not None:
        await before_update(merged)
    if checkout is None:
        moved = await git(
            [
                "update-ref",
                "-m",
                f"paperclip: merge {branch} ({strategy})",
                f"refs/heads/{base_ref}",
                new,
                base,
            ],
            repo,
            check=False,
        )
        if moved.returncode != 0:
            raise _BaseMoved
    else:
        done = await git(["merge", "--ff-only", "--no-edit", "--quiet", new], checkout, check=False)
        if done.returncode != 0:
            if await commit_of(git, checkout, "HEAD") != base:
                raise _BaseMoved
            raise MergeRefused(
                BASE_CHECKOUT_DIRTY,
                f"git would not update the checkout of {base_ref} at {checkout}: "
                f"{quote(done.stderr)}; commit or stash its changes, then merge again",
            )
    return merged


async def _merge_commit(
    git: Git, repo: Path, branch: str, base_ref: str, base: str, head: str, message: str
) -> str:
    """The merge commit of ``head`` into ``base`` (written, not yet on any branch)."""
    merged = await git(
        ["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", base, head],
        repo,
        check=False,
    )
    if merged.returncode not in (0, 1):
        raise WorkspaceError(
            WORKSPACE_UNAVAILABLE,
            f"git could not compute the merge of {branch} into {base_ref} (a merge commit needs "
            f"git 2.38 or later on the runner host): {quote(merged.stderr)}",
        )
    tree, *rest = merged.stdout.decode("utf-8", "replace").split("\0")
    if merged.returncode == 1:
        conflicts = sorted({name for name in rest if name})
        raise MergeRefused(
            MERGE_CONFLICT,
            f"{branch} and {base_ref} both changed {len(conflicts)} file(s) in ways git cannot "
            f"reconcile: nothing was merged. Resolve it on {branch} (merge {base_ref} into it, "
            "or rebase it, or ask the agent to), then merge again",
            conflicts=conflicts,
        )
    text = (message.replace("\0", "").strip() or f"Merge {branch}")[:MAX_MESSAGE] + "\n"
    made = await git(
        ["commit-tree", tree, "-p", base, "-p", head], repo, env=SAVER, input=text.encode()
    )
    return made.text


async def _checkout_of(git: Git, repo: Path, base_ref: str) -> Path | None:
    """The working tree where ``base_ref`` is checked out, if any (a folder that still exists)."""
    listed = await git(["worktree", "list", "--porcelain", "-z"], repo)
    wanted = f"branch refs/heads/{base_ref}"
    for block in listed.stdout.decode("utf-8", "replace").split("\0\0"):
        fields = block.strip("\0").split("\0")
        path = next((f.removeprefix("worktree ") for f in fields if f.startswith("worktree ")), "")
        if wanted in fields and path and "bare" not in fields and is_dir(Path(path)):
            return Path(path)
    return None


async def _check_checkout(git: Git, checkout: Path, base_ref: str, base: str, new: str) -> None:
    """Refuse when the checkout has uncommitted changes to a file the merge touches."""
    if await commit_of(git, checkout, "HEAD") != base:
        raise _BaseMoved
    touched = await _names(git, checkout, ["diff", "--name-only", "-z", "--no-renames", base, new])
    staged = await _names(
        git, checkout, ["diff", "--name-only", "-z", "--no-renames", "--cached", "HEAD"]
    )
    unstaged = await _names(git, checkout, ["diff", "--name-only", "-z", "--no-renames"])
    untracked = await _names(git, checkout, ["ls-files", "--others", "--exclude-standard", "-z"])
    dirty = sorted(touched & (staged | unstaged | untracked))
    if dirty:
        raise MergeRefused(
            BASE_CHECKOUT_DIRTY,
            f"{base_ref} is checked out at {checkout} with uncommitted changes to "
            f"{len(dirty)} file(s) the merge changes: nothing was merged. Commit or stash "
            "them there, then merge again",
            files=dirty,
        )


async def _names(git: Git, cwd: Path, args: list[str]) -> set[str]:
    done = await git(args, cwd)
    return {name for name in done.stdout.decode("utf-8", "replace").split("\0") if name}


def _inside(path: Path, folder: Path) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real == root or real.startswith(root + os.sep)
