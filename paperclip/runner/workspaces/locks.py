"""File locks on the runner host: one writer of a worktree, one maker of a repository's worktrees.

``flock`` locks belong to an open file, so they hold between two runner
processes on one host and between two callers in one process alike, and they
go with the process that held them (a SIGKILL leaves no stale lock). The files
are opened close-on-exec: a provider process started while one is held does
not inherit it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def try_lock(path: Path) -> int | None:
    """The open lock file, holding an exclusive lock; None when someone else holds it."""
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def held(fd: int) -> Iterator[None]:
    """Release the lock (close the file) on the way out."""
    try:
        yield
    finally:
        os.close(fd)


@contextlib.asynccontextmanager
async def waiting_lock(path: Path, patience: float) -> AsyncIterator[bool]:
    """Hold ``path``'s lock, waiting for it up to ``patience`` seconds (polled: cancellable).

    Yields whether it was taken; the caller says what a timeout means.
    """
    deadline = time.monotonic() + patience
    pause = 0.01
    while (fd := try_lock(path)) is None:
        if time.monotonic() >= deadline:
            yield False
            return
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.25)
    with held(fd):
        yield True
