"""A database's backup to one file, and its restore, with PostgreSQL's own programs.

``pg_dump --format=custom`` takes a consistent snapshot of a running
database (one transaction: what committed before it began, nothing after),
so a backup needs no stop; ``pg_restore --single-transaction`` restores all
of it or nothing. The programs are those of the embedded PostgreSQL's wheel,
whichever database is used; for an external server they must be of its
major version or newer (docs/operations.md#backup-and-restore).

The password of a URL reaches the programs through their environment
(``PGPASSWORD``), never their command line, which other users may read.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from paperclip.db import pg_install
from paperclip.db.access import running_as_root


class BackupError(Exception):
    """A backup or restore that could not be made; its message says why, in one line."""


@dataclass(frozen=True)
class Target:
    """Where a database is, as libpq's programs are told it."""

    conninfo: str
    password: str | None

    @classmethod
    def of(cls, url: str) -> Target:
        """From a ``postgresql://`` URL (the embedded server's socket in ``?host=``)."""
        parsed = make_url(url)
        query = parsed.query
        parts = {
            "host": query.get("host", parsed.host),
            "port": parsed.port,
            "user": parsed.username,
            "dbname": parsed.database,
            # asyncpg's ssl=require is libpq's sslmode=require
            "sslmode": query.get("sslmode", query.get("ssl")),
        }
        conninfo = " ".join(f"{k}={_quoted(str(v))}" for k, v in parts.items() if v)
        return cls(conninfo, parsed.password or None)

    def env(self) -> dict[str, str]:
        # The operator's own PG* settings (PGSSLROOTCERT, …) stay; the URL's parts win.
        env = dict(os.environ)
        if self.password:
            env["PGPASSWORD"] = self.password
        return env


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def program(name: str) -> Path:
    """A program of the newest PostgreSQL the wheel ships (``pg_dump``, ``pg_restore``)."""
    install = pg_install.install_for(pg_install.newest_version(), as_root=running_as_root())
    return install / "bin" / name


def _run(args: list[str], target: Target, what: str) -> str:
    result = subprocess.run(args, capture_output=True, text=True, env=target.env(), check=False)
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        raise BackupError(f"{what} failed: {lines[0] if lines else f'exit {result.returncode}'}")
    return result.stdout


def backup(url: str, file: Path) -> int:
    """Write the database at ``url`` to ``file`` (PostgreSQL's custom format); its size."""
    target = Target.of(url)
    partial = file.with_name(file.name + ".partial")
    try:
        _run(
            [
                str(program("pg_dump")),
                "--format=custom",
                "--no-owner",
                "--no-privileges",
                f"--file={partial}",
                f"--dbname={target.conninfo}",
            ],
            target,
            "pg_dump",
        )
        # Whole or not at all: a file of this name is always a finished backup.
        partial.replace(file)
    finally:
        partial.unlink(missing_ok=True)
    return file.stat().st_size


def check_file(file: Path) -> None:
    """Refuse a file that is not a backup ``pg_restore`` reads (before touching a database)."""
    if not file.is_file():
        raise BackupError(f"no backup file at {file}")
    _run(
        [str(program("pg_restore")), "--list", str(file)],
        Target("", None),
        f"reading {file} as a backup",
    )


def restore(url: str, file: Path) -> None:
    """Restore ``file`` into the database at ``url``, which must hold no tables yet."""
    check_file(file)
    target = Target.of(url)
    _run(
        [
            str(program("pg_restore")),
            "--no-owner",
            "--no-privileges",
            "--exit-on-error",
            "--single-transaction",
            f"--dbname={target.conninfo}",
            str(file),
        ],
        target,
        "pg_restore",
    )
