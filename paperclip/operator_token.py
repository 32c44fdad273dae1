"""The operator's token of a server without login: who may act as the operator on this host.

Without login, a server on loopback is reachable by every process and every
account of the machine. The operator proves who they are with a random token
the server keeps in a file of its data dir that only its own user can read
(mode 0600), as Jupyter does: ``paperclip serve`` prints a board URL that
carries it (the board turns it into a cookie), and the CLI reads the file.

The file is made once and reused, so a restarted server keeps its token (and
the board's cookie stays good); remove it to make a new one at the next start.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

TOKEN_PREFIX = "pco_"
TOKEN_FILE = "operator-token"
COOKIE_PREFIX = "paperclip_operator_"
QUERY_PARAMETER = "token"


class OperatorTokenError(Exception):
    """A token file this server must not trust: another user's, or readable by others."""


def token_file(data_dir: Path) -> Path:
    """Where the server of ``data_dir`` keeps its operator token."""
    return data_dir / TOKEN_FILE


def ensure_token(data_dir: Path) -> str:
    """The operator token of ``data_dir``: the one on file, or a new one written there (0600).

    Refuses a file another user owns or others may read or write: its token
    may be known to someone else.
    """
    path = token_file(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    token = read_token(path)
    if token is not None:
        return token
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    # Written whole under another name, then linked in: a reader never sees half a token,
    # and of two servers starting at once the second reads the first one's.
    spare = path.with_name(f".{TOKEN_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(token + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(spare, path)
    finally:
        spare.unlink(missing_ok=True)
    found = read_token(path)
    if found is None:
        raise OperatorTokenError(f"{path} holds no operator token; remove it and start again")
    return found


def read_token(path: Path) -> str | None:
    """The token in ``path``; None when there is no such file (or it is empty).

    Raises :class:`OperatorTokenError` for a file this user must not trust.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OperatorTokenError(f"cannot read {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OperatorTokenError(f"{path} is not a regular file")
        if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
            raise OperatorTokenError(
                f"{path} belongs to another user (uid {info.st_uid}): its token may be known "
                "to them; remove it and start again"
            )
        if info.st_mode & 0o077:
            raise OperatorTokenError(
                f"{path} may be read or written by other users (mode "
                f"{stat.S_IMODE(info.st_mode):04o}): its token may be known to them; remove it "
                "and start again"
            )
        token = handle.read().strip()
    return token or None


def cookie_name(host_header: str | None) -> str:
    """The board's cookie for the server at ``host_header``.

    Cookies are shared by every port of a host: each server's carries its
    port in its name, so two servers on one machine do not overwrite each
    other's.
    """
    value = (host_header or "").strip()
    port = value.rsplit(":", 1)[1] if ":" in value and not value.endswith("]") else "80"
    return COOKIE_PREFIX + (port if port.isdigit() else "80")


def board_url(base_url: str, token: str | None) -> str:
    """The board's address that signs the operator in (``/?token=…``), or just ``/``."""
    return f"{base_url}/?{QUERY_PARAMETER}={token}" if token else f"{base_url}/"
