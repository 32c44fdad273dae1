"""Who the embedded PostgreSQL runs as, and whether that user can reach its folders.

PostgreSQL refuses to run as root. Started by root, it runs as the system user
``pgserver`` (made on first use); started by anyone else, as that user. Either
way Paperclip checks the folders on the way instead of changing their modes,
and says what to do when one is closed. The folder of the server's socket is
the opposite case: it must be closed to everyone but that user.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SYSTEM_USER = "pgserver"


class EmbeddedDatabaseError(Exception):
    """The embedded PostgreSQL cannot run here; the message says why and what to do."""


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass(frozen=True, slots=True)
class ServerUser:
    """The user the server's programs run as."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    switch: bool
    """True when it is not the calling user (root starting ``pgserver``)."""

    def subprocess_kwargs(self) -> dict[str, Any]:
        """Arguments of ``subprocess.run`` that run a program as this user."""
        if not self.switch:
            return {}
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": "/",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "USER": self.name,
            "LOGNAME": self.name,
        }
        # Its own groups only: none of root's.
        return {"user": self.uid, "group": self.gid, "extra_groups": list(self.groups), "env": env}


def server_user() -> ServerUser:
    if not running_as_root():
        entry = pwd.getpwuid(os.getuid())
        return ServerUser(entry.pw_name, entry.pw_uid, entry.pw_gid, tuple(os.getgroups()), False)
    entry = ensure_system_user()
    groups = tuple(sorted({entry.pw_gid, *os.getgrouplist(entry.pw_name, entry.pw_gid)}))
    return ServerUser(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, True)


def ensure_system_user(attempts: int = 20) -> pwd.struct_passwd:
    """As root, make sure the system user exists, even when processes race to make it.

    Several processes starting at once (parallel test environments on a new
    machine) can collide in ``useradd``: one wins, the others see "already
    exists" or a locked password file.
    """
    for _ in range(attempts):
        try:
            return pwd.getpwnam(SYSTEM_USER)
        except KeyError:
            pass
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SYSTEM_USER,
            ],
            capture_output=True,
            check=False,
        )
        time.sleep(0.05)
    return pwd.getpwnam(SYSTEM_USER)  # still missing: let the KeyError say so


def first_untraversable(path: Path, *, uid: int, gids: Iterable[int]) -> Path | None:
    """The first existing folder from ``/`` down to ``path`` that the user cannot enter.

    ``uid`` -1 asks for anyone at all (only the bits for others count).
    """
    groups = set(gids)
    for folder in (*reversed(path.parents), path):
        try:
            info = folder.stat()
        except FileNotFoundError:
            return None  # the rest will be made by us
        if uid == 0:
            continue
        if info.st_uid == uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid in groups:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            return folder
    return None


def require_reachable(path: Path, user: ServerUser, what: str) -> None:
    """Refuse, saying what to do, when ``user`` cannot reach ``path``."""
    blocked = first_untraversable(path, uid=user.uid, gids=user.groups)
    if blocked is None:
        return
    mode = stat.filemode(blocked.stat().st_mode)
    runs_as = (
        f"runs as the system user {user.name!r} when started by root (PostgreSQL refuses to "
        "run as root)"
        if user.switch
        else f"runs as {user.name!r}"
    )
    raise EmbeddedDatabaseError(
        f"the embedded PostgreSQL {runs_as}, and that user cannot enter {blocked} ({mode}) on "
        f"the way to its {what} {path}. Paperclip does not change the modes of folders it did "
        "not make. Set PAPERCLIP_DATA_DIR to a folder that user can reach (as root the default, "
        "/var/lib/paperclip, is one), run Paperclip as a regular user, or set "
        "PAPERCLIP_DATABASE_URL to use another PostgreSQL."
    )


def require_private(folder: Path, user: ServerUser, what: str) -> None:
    """Refuse, saying what to do, unless ``folder`` is a folder of ``user`` alone.

    The database trusts every connection on its socket, so the folder holding
    the socket is the lock: owned by the server's user, no rights for group or
    others, not a symbolic link (``lstat``: the folder itself is judged).
    """
    info = os.lstat(folder)
    if stat.S_ISDIR(info.st_mode) and info.st_uid == user.uid and not info.st_mode & 0o077:
        return
    raise EmbeddedDatabaseError(
        f"the embedded PostgreSQL's {what} {folder} is {stat.filemode(info.st_mode)}, owned by "
        f"{_owner(info.st_uid, info.st_gid)}: it must be a folder of {user.name!r} alone "
        "(mode 0700), because the database trusts every connection on its socket. Paperclip "
        "does not use or change it: stop the server that listens there, remove the folder, and "
        "start again."
    )


def _owner(uid: int, gid: int) -> str:
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    try:
        group = grp.getgrgid(gid).gr_name
    except KeyError:
        group = str(gid)
    return f"{user}:{group}"
