"""``paperclip db backup FILE`` and ``paperclip db restore FILE`` (docs/operations.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click

from paperclip.cli.context import database_errors, start_database
from paperclip.cli_kit.output import console, emit_json, fail
from paperclip.cli_kit.settings import load_settings

TABLES = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"


def _tables(container: Any) -> int:
    async def count() -> int:
        from sqlalchemy import text

        try:
            async with container.engine().connect() as conn:
                return int(await conn.scalar(text(TABLES)) or 0)
        finally:
            await container.engine().dispose()

    return asyncio.run(count())


@click.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def db_backup(file: Path, as_json: bool) -> None:
    """Write the database to FILE: a consistent snapshot, taken while the server runs.

    The embedded PostgreSQL's, or PAPERCLIP_DATABASE_URL's; PostgreSQL's own
    pg_dump (custom format), which `paperclip db restore` reads.
    """
    from paperclip.db.backup import BackupError, backup

    if file.exists():
        fail(f"{file} exists", hint="Name a new file: a backup never overwrites one.", code=2)
    if not file.parent.is_dir():
        fail(f"no folder {file.parent} for the backup", code=2)
    settings = load_settings()
    container = start_database(settings)
    try:
        with database_errors(settings):
            size = backup(container.database_url(), file)
    except BackupError as exc:
        fail(str(exc), code=2)
    finally:
        container.shutdown_resources()
    if as_json:
        emit_json({"file": str(file), "bytes": size})
    else:
        console.print(f"backed up the database to [bold]{file}[/] ({size:,} bytes)")


@click.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def db_restore(file: Path, as_json: bool) -> None:
    """Restore FILE (from `paperclip db backup`) into an empty database, then migrate it.

    Into a new data dir (PAPERCLIP_DATA_DIR) for the embedded PostgreSQL, or an
    empty database at PAPERCLIP_DATABASE_URL. A database that holds tables is
    refused: nothing is written. All of the backup is restored, or nothing.
    """
    from paperclip.db import migrate
    from paperclip.db.backup import BackupError, check_file, restore

    try:
        check_file(file)
    except BackupError as exc:
        fail(str(exc), code=2)
    settings = load_settings()
    container = start_database(settings)
    try:
        with database_errors(settings):
            url = container.database_url()
            if _tables(container):
                fail(
                    "the database already holds tables: a restore goes into an empty one",
                    hint="Set PAPERCLIP_DATA_DIR to a new folder (or PAPERCLIP_DATABASE_URL to an "
                    "empty database) and restore there.",
                    code=2,
                )
            restore(url, file)
            migrate.upgrade(url)  # a backup of an earlier version: brought to this one
            revision = migrate.current_revision(url)
    except BackupError as exc:
        fail(str(exc), code=2)
    finally:
        container.shutdown_resources()
    if as_json:
        emit_json({"file": str(file), "revision": revision})
    else:
        console.print(f"restored [bold]{file}[/]; database at revision [bold]{revision}[/]")
