"""The disk the runner's folders use, and the run folders it no longer needs.

Everything here blocks on the file system: callers on the event loop run it
in a thread (``asyncio.to_thread``). Symlinks are never followed, so a link an
agent left in its folder neither counts foreign bytes nor leads a removal out.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

WORKTREE_DEPTH = 4
"""A worktree's key is at most four folder names deep."""


@dataclass(frozen=True, slots=True)
class Usage:
    workspace_bytes: int
    """Everything under ``workspaces/`` (worktrees, half-made and moved-aside ones)."""
    workspace_count: int
    mirror_bytes: int


def _entries(top: Path) -> Iterator[os.DirEntry[str]]:
    """Every entry under ``top``, not following symlinks; unreadable folders skipped."""
    stack = [str(top)]
    while stack:
        try:
            with os.scandir(stack.pop()) as found:
                for entry in found:
                    yield entry
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue


def tree_bytes(top: Path) -> int:
    """The bytes ``top``'s files take on disk (each file once, however many links it has)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for entry in _entries(top):
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        blocks = getattr(info, "st_blocks", None)
        total += blocks * 512 if blocks is not None else info.st_size
    return total


def _worktrees(folder: Path, depth: int) -> int:
    """How many worktrees lie under ``folder`` (folders holding a ``.git``), within ``depth``."""
    count = 0
    try:
        with os.scandir(folder) as found:
            entries = [e for e in found if e.is_dir(follow_symlinks=False)]
    except OSError:
        return 0
    for entry in entries:
        if entry.name.startswith("."):
            continue  # .staging, .orphaned, .locks: not worktrees
        if os.path.lexists(os.path.join(entry.path, ".git")):
            count += 1
        elif depth > 1:
            count += _worktrees(Path(entry.path), depth - 1)
    return count


def usage(work_dir: Path) -> Usage:
    """What the runner's worktrees and mirrors under ``work_dir`` take."""
    workspaces, mirrors = work_dir / "workspaces", work_dir / "mirrors"
    return Usage(
        workspace_bytes=tree_bytes(workspaces) if workspaces.is_dir() else 0,
        workspace_count=_worktrees(workspaces, WORKTREE_DEPTH) if workspaces.is_dir() else 0,
        mirror_bytes=tree_bytes(mirrors) if mirrors.is_dir() else 0,
    )


def _changed_since(top: Path, cutoff: float) -> bool:
    """Whether ``top`` or anything under it was modified at or after ``cutoff``."""
    try:
        if os.lstat(top).st_mtime >= cutoff:
            return True
    except OSError:
        return True  # unsure: keep it
    for entry in _entries(top):
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= cutoff:
                return True
        except OSError:
            return True
    return False


def _writable_and_retry(function: Callable[[str], object], path: str, _error: object) -> None:
    """A folder a tool made read-only (a Go module cache) is made writable, then removed."""
    parent = os.path.dirname(path)
    os.chmod(parent, stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, stat.S_IRWXU)
    function(path)


def sweep_run_folders(
    runs_dir: Path, older_than: timedelta, keep: set[str], now: datetime
) -> list[str]:
    """Remove the run folders (``runs/<run_id>``) not in ``keep`` whose newest change is
    older than ``now - older_than``; the names removed."""
    if not runs_dir.is_dir():
        return []
    cutoff = (now - older_than).timestamp()
    removed = []
    with os.scandir(runs_dir) as found:
        candidates = sorted(
            Path(e.path) for e in found if e.name not in keep and e.is_dir(follow_symlinks=False)
        )
    for folder in candidates:
        if _changed_since(folder, cutoff):
            continue
        try:
            if sys.version_info >= (3, 12):
                shutil.rmtree(folder, onexc=_writable_and_retry)
            else:
                shutil.rmtree(folder, onerror=_writable_and_retry)
        except OSError:
            continue  # left for the next sweep
        removed.append(folder.name)
    return removed
