"""The folders of worktrees on the runner host: private ones, and what is found in them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def private_dir(folder: Path) -> None:
    """``folder`` made if missing, and 0700 (whatever the umask); one opened for others to
    pass through (``--x``, see :func:`sharing.passable`) stays so."""
    folder.mkdir(mode=0o700, exist_ok=True)
    mode = folder.stat().st_mode & 0o777
    if mode != 0o700 | (mode & 0o011):
        os.chmod(folder, 0o700 | (mode & 0o011))


def admin_dir(path: Path) -> Path | None:
    """The administrative folder a worktree's ``.git`` file at ``path`` points to, if any."""
    dotgit = path / ".git"
    if path.is_symlink() or not path.is_dir() or dotgit.is_symlink() or not dotgit.is_file():
        return None
    try:
        line = dotgit.read_text(errors="replace").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    return Path(os.path.realpath(path / line.removeprefix("gitdir:").strip()))


def same(one: Path, other: Path) -> bool:
    return os.path.realpath(one) == os.path.realpath(other)


def is_dir(path: Path) -> bool:
    return path.is_dir()


def occupied(path: Path) -> bool:
    """Whether anything (a dangling symlink too) is at ``path``."""
    return os.path.lexists(path)


def remove(entry: Path) -> None:
    if entry.is_symlink() or not entry.is_dir():
        entry.unlink()
    else:
        shutil.rmtree(entry)
