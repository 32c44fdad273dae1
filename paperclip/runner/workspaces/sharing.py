"""An issue's worktree shared with the agent's user: it edits and commits, the runner stays safe.

The runner (root) makes worktrees; the provider runs as another user (see
:mod:`paperclip.runner.isolation`). For that user's ``git commit`` to work:

- **the worktree's files** are its own; the worktree's folder stays the runner's, open to
  the user's group (``rwx``) with the sticky bit, so the ``.git`` file in it, the runner's,
  can be neither replaced nor rewritten;
- **the worktree's git folder** (``<common>/worktrees/<name>``) is the same: its ``index``,
  ``HEAD`` and logs are the user's, its ``gitdir``, ``commondir`` and an empty
  ``config.worktree`` stay the runner's and unwritable. No setgid there: files the runner's
  git writes later keep the runner's group;
- **the repository's objects, refs and logs** are writable by the group (setgid folders,
  ``core.sharedRepository=group`` so git keeps new ones so); its top folder, ``config``
  and ``hooks`` are readable only.

So the runner's own git commands in the worktree still find only folders and files of
its own on the way to the repository's configuration: git's ``safe.directory`` check
passes without an override, and nothing the agent writes is read as configuration or
run by the runner. The agent's git gets ``safe.directory`` for its worktree through its
environment (:func:`paperclip.runner.workspaces.git.provider_git_env`).
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from paperclip_hookspecs.providers import ProcessUser

from paperclip.runner.workspaces.errors import WorkspaceError
from paperclip.runner.workspaces.report import Git
from paperclip.wire.workspace_rules import WORKSPACE_UNAVAILABLE

PROTECTED = ("gitdir", "commondir", "locked", "config.worktree")
"""The files of a worktree's git folder the runner's git reads as its own: never the agent's
(``config.worktree`` is made empty, so the agent cannot make one that a repository with
``extensions.worktreeConfig`` would read)."""
SHARED_TREES = ("objects", "refs", "logs")
"""What an agent's commit writes in the repository."""
READ_ONLY = ("worktrees", "info", "hooks")


async def share(
    git: Git, repo: Path, admin: Path, worktree: Path, user: ProcessUser, passing: list[Path]
) -> None:
    """Share the worktree at ``worktree`` of ``repo`` (``admin``: its git folder) with ``user``,
    ``passing`` the runner's folders on the way, which it may only pass through."""
    common = await git(["rev-parse", "--path-format=absolute", "--git-common-dir"], repo)
    shared = await git(["config", "--get", "core.sharedRepository"], repo, check=False)
    if shared.text.lower() not in ("group", "true", "1"):
        await git(["config", "core.sharedRepository", "group"], repo)
    try:
        for folder in passing:
            await asyncio.to_thread(passable, folder)
        await asyncio.to_thread(share_worktree, Path(common.text), admin, worktree, user)
    except OSError as exc:
        raise WorkspaceError(
            WORKSPACE_UNAVAILABLE,
            f"could not share the worktree {worktree} with {user.name}: {exc}",
        ) from None


def share_worktree(common: Path, admin: Path, worktree: Path, user: ProcessUser) -> None:
    """Let ``user`` edit ``worktree`` and commit on its branch (see the module's text).

    ``common`` is the repository's git folder, ``admin`` the worktree's own git folder in
    it. Idempotent: a turn calls it each time (files the runner's user left are given).
    Every change under a folder the agent may write is made through file descriptors,
    never following a link: a link swapped in meanwhile changes nothing of the host's."""
    _group_folder(common, user.gid, 0o050, setgid=False)
    for name in ("config", "HEAD", "packed-refs", "shallow"):
        _readable(common / name, user.gid)
    for name in READ_ONLY:
        if (common / name).is_dir():
            _group_folder(common / name, user.gid, 0o050, setgid=False)
    for name in SHARED_TREES:
        # Made now if missing: made later by the runner's git, it would not be the group's.
        (common / name).mkdir(mode=0o755, exist_ok=True)
        _share_tree(common / name, user.gid, files=0o060 if name != "objects" else 0o040)
    _guard_folder(admin, user, keep=PROTECTED, required=("gitdir", "commondir"))
    _guard_folder(worktree, user, keep=(".git",), required=(".git",))


def passable(folder: Path) -> None:
    """Let any user pass through ``folder`` (``--x`` for others, no listing)."""
    mode = stat.S_IMODE(os.lstat(folder).st_mode)
    if not mode & 0o001:
        os.chmod(folder, mode | 0o001)


def _readable(path: Path, gid: int) -> None:
    """A file of the repository's top folder (the runner's alone): readable by the group."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(info.st_mode) and not info.st_mode & 0o004:
        os.chown(path, -1, gid, follow_symlinks=False)
        os.chmod(path, (stat.S_IMODE(info.st_mode) | 0o040) & ~0o020)


def _group_folder(folder: Path, gid: int, bits: int, *, setgid: bool) -> None:
    """``folder`` (the runner's alone) of the group ``gid`` with exactly ``bits`` for it."""
    fd = _open_folder(folder)
    try:
        _group_fd(fd, gid, bits, setgid=setgid)
    finally:
        os.close(fd)


def _group_fd(fd: int, gid: int, bits: int, *, setgid: bool) -> None:
    info = os.fstat(fd)
    if info.st_gid != gid:
        os.fchown(fd, -1, gid)
    mode = (stat.S_IMODE(info.st_mode) & ~0o2070) | bits | (stat.S_ISGID if setgid else 0)
    if mode != stat.S_IMODE(info.st_mode):
        os.fchmod(fd, mode)


def _open_folder(path: Path | str, dir_fd: int | None = None) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, dir_fd=dir_fd)


def _open_file(name: str, dir_fd: int) -> int | None:
    """``name`` in ``dir_fd`` opened to change its mode, if a regular file (never a link)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None  # gone, a link, a socket: nothing to open up
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _share_tree(top: Path, gid: int, *, files: int) -> None:
    """Every folder under ``top`` writable by the group ``gid`` (setgid: new ones stay its),
    every file readable by it (and writable: ``files``). Skipped once done."""
    info = os.lstat(top)
    if info.st_gid == gid and info.st_mode & 0o2070 == 0o2070:
        return  # done before; git keeps what it makes so (core.sharedRepository)
    # Bottom up: ``top`` is done last, so a walk cut short is walked again.
    for _, _, names, dir_fd in os.fwalk(top, topdown=False, follow_symlinks=False):
        for name in names:
            fd = _open_file(name, dir_fd)
            if fd is None:
                continue
            try:
                os.fchown(fd, -1, gid)
                os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) | files)
            finally:
                os.close(fd)
        _group_fd(dir_fd, gid, 0o070, setgid=True)


def _guard_folder(
    folder: Path, user: ProcessUser, *, keep: tuple[str, ...], required: tuple[str, ...]
) -> None:
    """``folder`` the runner's, ``rwx`` for the user's group with the sticky bit (no setgid);
    everything in it the user's, but the entries ``keep`` names: the runner's, read-only
    (one that is not the runner's is removed, or refused when ``required``)."""
    fd = _open_folder(folder)
    try:
        os.fchown(fd, os.geteuid(), user.gid)
        os.fchmod(fd, stat.S_ISVTX | 0o770)
        for name in keep:
            _protect(fd, folder / name, required=name in required)
        with os.scandir(fd) as entries:
            given = [entry.name for entry in entries if entry.name not in keep]
        for name in given:
            _give(fd, name, user)
    finally:
        os.close(fd)


def _protect(dir_fd: int, path: Path, *, required: bool) -> None:
    """``path`` (in ``dir_fd``) the runner's and read-only; made empty when missing and not
    ``required`` (a placeholder another user cannot make), removed when another's."""
    name = path.name
    for _ in range(3):
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            if required:
                raise OSError(f"{path} is missing") from None
            try:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                os.close(os.open(name, flags, 0o644, dir_fd=dir_fd))
            except FileExistsError:
                continue  # made meanwhile: looked at again
            return
        if info.st_uid != os.geteuid() or not stat.S_ISREG(info.st_mode):
            if required:
                raise OSError(f"{path} is not this runner's file")
            os.unlink(name, dir_fd=dir_fd)  # another's: gone, made again as the runner's
            continue
        if info.st_mode & 0o022:
            fd = _open_file(name, dir_fd)
            if fd is not None:
                os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) & ~0o022)
                os.close(fd)
        return
    raise OSError(f"{path} keeps being replaced")


def _give(dir_fd: int, name: str, user: ProcessUser) -> None:
    """``name`` in ``dir_fd`` and all under it the user's (links themselves, never what
    they point to)."""
    ids = (user.uid, user.gid)
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if (info.st_uid, info.st_gid) != ids:
        os.chown(name, *ids, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode):
        return
    for _, dirs, names, fd in os.fwalk(name, dir_fd=dir_fd, follow_symlinks=False):
        for entry in [*dirs, *names]:
            try:
                found = os.stat(entry, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if (found.st_uid, found.st_gid) != ids:
                os.chown(entry, *ids, dir_fd=fd, follow_symlinks=False)
