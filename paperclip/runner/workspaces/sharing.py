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

from paperclip.runner.workspaces.report import Git

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
    for folder in passing:
        await asyncio.to_thread(passable, folder)
    await asyncio.to_thread(share_worktree, Path(common.text), admin, worktree, user)


def share_worktree(common: Path, admin: Path, worktree: Path, user: ProcessUser) -> None:
    """Let ``user`` edit ``worktree`` and commit on its branch (see the module's text).

    ``common`` is the repository's git folder, ``admin`` the worktree's own git folder in
    it. Idempotent: a turn calls it each time (files the runner's user left are given)."""
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
    placeholder = admin / "config.worktree"
    if not os.path.lexists(placeholder):
        placeholder.touch(mode=0o644)
    _guard_folder(admin, user, keep=PROTECTED)
    _guard_folder(worktree, user, keep=(".git",))


def passable(folder: Path) -> None:
    """Let any user pass through ``folder`` (``--x`` for others, no listing)."""
    mode = stat.S_IMODE(os.lstat(folder).st_mode)
    if not mode & 0o001:
        os.chmod(folder, mode | 0o001)


def _readable(path: Path, gid: int) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(info.st_mode) and not info.st_mode & 0o004:
        os.chown(path, -1, gid, follow_symlinks=False)
        os.chmod(path, (stat.S_IMODE(info.st_mode) | 0o040) & ~0o020)


def _group_folder(folder: Path, gid: int, bits: int, *, setgid: bool) -> None:
    """``folder`` of the group ``gid`` with exactly ``bits`` for it (and setgid or not)."""
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode):
        raise OSError(f"{folder} is a symbolic link")
    if info.st_gid != gid:
        os.chown(folder, -1, gid, follow_symlinks=False)
    mode = (stat.S_IMODE(info.st_mode) & ~0o2070) | bits | (stat.S_ISGID if setgid else 0)
    if mode != stat.S_IMODE(info.st_mode):
        os.chmod(folder, mode)


def _share_tree(top: Path, gid: int, *, files: int) -> None:
    """Every folder under ``top`` writable by the group ``gid`` (setgid: new ones stay its),
    every file readable by it (and writable: ``files``). Skipped once done."""
    info = os.lstat(top)
    if info.st_gid == gid and info.st_mode & 0o2070 == 0o2070:
        return  # done before; git keeps what it makes so (core.sharedRepository)
    for folder, dirs, names in os.walk(top):
        for name in names:
            path = os.path.join(folder, name)
            entry = os.lstat(path)
            if stat.S_ISREG(entry.st_mode):
                os.chown(path, -1, gid, follow_symlinks=False)
                os.chmod(path, stat.S_IMODE(entry.st_mode) | files)
        for name in dirs:
            path = Path(folder, name)
            if not path.is_symlink():
                _group_folder(path, gid, 0o070, setgid=True)
    _group_folder(top, gid, 0o070, setgid=True)


def _guard_folder(folder: Path, user: ProcessUser, *, keep: tuple[str, ...]) -> None:
    """``folder`` the runner's, ``rwx`` for the user's group with the sticky bit (no setgid);
    everything in it the user's, but the entries named in ``keep``: the runner's, read-only."""
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{folder} is not a folder")
    os.chown(folder, os.geteuid(), user.gid, follow_symlinks=False)
    os.chmod(folder, stat.S_ISVTX | 0o770)
    for name in keep:
        path = folder / name
        try:
            entry = os.lstat(path)
        except FileNotFoundError:
            continue
        os.chown(path, os.geteuid(), os.getegid(), follow_symlinks=False)
        if not stat.S_ISLNK(entry.st_mode):
            os.chmod(path, stat.S_IMODE(entry.st_mode) & ~0o022)
    with os.scandir(folder) as entries:
        given = [Path(entry.path) for entry in entries if entry.name not in keep]
    for path in given:
        _give(path, user)


def _give(top: Path, user: ProcessUser) -> None:
    """``top`` and all under it the user's (links themselves, never what they point to)."""
    ids = (user.uid, user.gid)
    entry = os.lstat(top)
    if (entry.st_uid, entry.st_gid) != ids:
        os.chown(top, *ids, follow_symlinks=False)
    if not stat.S_ISDIR(entry.st_mode):
        return
    for folder, dirs, names in os.walk(top):
        for name in [*dirs, *names]:
            path = os.path.join(folder, name)
            entry = os.lstat(path)
            if (entry.st_uid, entry.st_gid) != ids:
                os.chown(path, *ids, follow_symlinks=False)
