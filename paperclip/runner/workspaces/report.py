"""A worktree's work product against its base commit: state, changed files and a bounded diff.

Read-only for the worktree: git runs with optional locks off, and untracked
files are shown as new files through a copy of the index (``GIT_INDEX_FILE``)
in which they are marked intent-to-add, never through the worktree's own.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from paperclip.runner.workspaces.disk import tree_bytes
from paperclip.runner.workspaces.git import GitResult
from paperclip.wire.messages import FileChange, WorkspaceState

Git = Callable[..., Awaitable[GitResult]]
"""``git(args, cwd, **options)``: the runner's one way to run git."""
_DIFF = ["diff", "--no-color", "--no-ext-diff", "--no-textconv"]


def cut(diff: bytes, limit: int) -> tuple[str, bool]:
    """``diff`` as text, cut on a line boundary to at most ``limit`` bytes; whether it was cut."""
    if len(diff) <= limit:
        return diff.decode("utf-8", "replace"), False
    kept = diff[:limit]
    kept = kept[: kept.rfind(b"\n") + 1]
    return kept.decode("utf-8", "replace"), True


def _split(output: bytes) -> list[str]:
    return [part.decode("utf-8", "surrogateescape") for part in output.split(b"\0")][:-1]


def _raw(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


def parse_numstat(output: bytes) -> dict[str, tuple[int | None, int | None]]:
    """``git diff --numstat -z``: path -> (added, deleted), None for a binary file."""
    counts: dict[str, tuple[int | None, int | None]] = {}
    parts = _split(output)
    index = 0
    while index < len(parts):
        added, deleted, path = parts[index].split("\t", 2)
        index += 1
        if path == "":  # a rename or copy: the old path, then the new one
            path = parts[index + 1]
            index += 2
        counts[path] = (
            None if added == "-" else int(added),
            None if deleted == "-" else int(deleted),
        )
    return counts


def parse_name_status(output: bytes) -> list[tuple[str, str]]:
    """``git diff --name-status -z``: (status letter, path), the new path of a rename."""
    found: list[tuple[str, str]] = []
    parts = _split(output)
    index = 0
    while index < len(parts):
        status = parts[index]
        if status[:1] in ("R", "C"):
            found.append((status[0], parts[index + 2]))
            index += 3
        else:
            found.append((status[:1], parts[index + 1]))
            index += 2
    return found


async def work_product(
    git: Git,
    path: Path,
    *,
    base_ref: str,
    base_commit: str,
    diff_limit: int,
    files_limit: int,
    scratch: Path,
) -> tuple[WorkspaceState, str, bool]:
    """The state of the worktree at ``path``, its diff against ``base_commit`` and whether
    that diff was cut."""
    head = (await git(["rev-parse", "HEAD"], path)).text
    branch = (await git(["rev-parse", "--abbrev-ref", "HEAD"], path)).text  # HEAD: detached
    ahead = int((await git(["rev-list", "--count", f"{base_commit}..HEAD"], path)).text)
    status = await git(["status", "--porcelain", "-z", "--untracked-files=normal"], path)
    listed = await git(["ls-files", "--others", "--exclude-standard", "-z"], path)
    untracked = _split(listed.stdout)
    shown = untracked[:files_limit]
    index = Path(
        (await git(["rev-parse", "--path-format=absolute", "--git-path", "index"], path)).text
    )
    with tempfile.TemporaryDirectory(dir=scratch, prefix="report-") as temp:
        temp_index = Path(temp) / "index"
        _copy_if_there(index, temp_index)
        options: dict[str, Any] = {"env": {"GIT_INDEX_FILE": str(temp_index)}}
        if shown:
            await git(
                ["add", "--intent-to-add", "--pathspec-from-file=-", "--pathspec-file-nul"],
                path,
                input=b"".join(_raw(name) + b"\0" for name in shown),
                env={"GIT_INDEX_FILE": str(temp_index), "GIT_LITERAL_PATHSPECS": "1"},
            )
        numstat = await git([*_DIFF, "--numstat", "-z", base_commit, "--"], path, **options)
        names = await git([*_DIFF, "--name-status", "-z", base_commit, "--"], path, **options)
        diff = await git([*_DIFF, base_commit, "--"], path, stdout_limit=diff_limit, **options)
    counts = parse_numstat(numstat.stdout)
    new = set(shown)
    files = [
        FileChange(
            path=_raw(name).decode("utf-8", "replace"),
            status="?" if name in new and letter == "A" else letter,
            added=counts.get(name, (None, None))[0],
            deleted=counts.get(name, (None, None))[1],
        )
        for letter, name in parse_name_status(names.stdout)
    ]
    text, truncated = cut(diff.stdout, diff_limit)
    state = WorkspaceState(
        path=str(path),
        branch=branch,
        head=head,
        base_ref=base_ref,
        base_commit=base_commit,
        ahead=ahead,
        files=files[:files_limit],
        files_truncated=len(files) > files_limit or len(untracked) > files_limit,
        untracked=len(untracked),
        dirty=bool(status.stdout),
        disk_bytes=await asyncio.to_thread(tree_bytes, path),
    )
    return state, text, truncated or diff.truncated


def _copy_if_there(source: Path, target: Path) -> None:
    if source.exists():
        shutil.copyfile(source, target)
