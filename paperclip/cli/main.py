"""``paperclip``: serve, migrate, inspect and manage keys; and a client of a running server."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import click

import paperclip
from paperclip.cli.background import stop
from paperclip.cli.backup import db_backup, db_restore
from paperclip.cli.board import board
from paperclip.cli.chaos import chaos
from paperclip.cli.context import database_errors, start_database, with_database
from paperclip.cli.plugins import plugins
from paperclip.cli.runner import runner, runners
from paperclip.cli_kit.output import console, emit_json, fail
from paperclip.cli_kit.settings import load_settings
from paperclip.domain.agents.cli import agents
from paperclip.domain.companies.cli import companies
from paperclip.domain.costs.cli import costs
from paperclip.domain.issues.cli import comments, issues
from paperclip.domain.routines.cli import routines
from paperclip.domain.runs.cli import runs
from paperclip.domain.workspaces.cli import workspace


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(paperclip.__version__, "--version", prog_name="paperclip")
def cli() -> None:
    """Paperclip: a control plane for AI coding agents."""


@cli.command()
@click.option("--host", help="Address to bind (PAPERCLIP_HOST).")
@click.option("--port", type=int, help="Port to bind; 0 picks a free one (PAPERCLIP_PORT).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable lines on stdout.")
@click.option(
    "--runner/--no-runner",
    "local_runner",
    default=None,
    help="Start a runner on this machine with the server (default; PAPERCLIP_LOCAL_RUNNER).",
)
@click.option(
    "--detach",
    is_flag=True,
    help="Run in the background: return once it listens (or with its error), its output in "
    "--log-file; `paperclip stop` stops it.",
)
@click.option(
    "--pid-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Name the server's pid here while it runs, and refuse to start while it names a "
    "running one (with --detach: <data dir>/serve.pid unless given).",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --detach: where its output goes (default <data dir>/serve.log).",
)
def serve(
    host: str | None,
    port: int | None,
    as_json: bool,
    local_runner: bool | None,
    detach: bool,
    pid_file: Path | None,
    log_file: Path | None,
) -> None:
    """Migrate the database, then serve the API until SIGTERM or Ctrl-C (or `paperclip stop`).

    A local runner is started too (and stopped with the server), so one command
    runs everything; remote runners connect with `paperclip runner`.
    """
    settings = load_settings(host=host, port=port, local_runner=local_runner)
    if detach:
        from paperclip.cli.background import default_files
        from paperclip.cli.background import detach as run_detached

        default_pid, default_log = default_files(settings.data_dir)
        options = [
            *(["--host", host] if host is not None else []),
            *(["--port", str(port)] if port is not None else []),
        ]
        if local_runner is not None:
            options.append("--runner" if local_runner else "--no-runner")
        run_detached(
            options,
            pid_file or default_pid,
            log_file or default_log,
            default=default_pid,
            wait_seconds=settings.database_wait_seconds + 120,
            as_json=as_json,
        )
        return
    if log_file is not None:
        fail("--log-file is for --detach: in the foreground the output is the terminal's", code=2)
    from paperclip.cli.serve import serve as run_server

    run_server(settings, as_json=as_json, pid_file=pid_file)


@cli.group()
def db() -> None:
    """Database migrations, backup and restore."""


db.add_command(db_backup)
db.add_command(db_restore)


@db.command("upgrade")
@click.option("--json", "as_json", is_flag=True)
def db_upgrade(as_json: bool) -> None:
    """Apply every pending migration."""
    from paperclip.db import migrate

    async def work(container: Any) -> str | None:
        return await asyncio.to_thread(migrate.current_revision, container.database_url())

    revision = with_database(load_settings(), work)
    if as_json:
        emit_json({"revision": revision})
    else:
        console.print(f"database at revision [bold]{revision}[/]")


@db.command("current")
@click.option("--json", "as_json", is_flag=True)
def db_current(as_json: bool) -> None:
    """Show the database's revision and the newest one this version knows."""
    from paperclip.db import migrate

    settings = load_settings()
    container = start_database(settings)
    try:
        with database_errors(settings):
            current = migrate.current_revision(container.database_url())
    finally:
        container.shutdown_resources()
    head = migrate.head_revision()
    if as_json:
        emit_json({"current": current, "head": head, "up_to_date": current == head})
        return
    state = (
        "[green]up to date[/]"
        if current == head
        else "[yellow]behind: run `paperclip db upgrade`[/]"
    )
    console.print(f"current: [bold]{current}[/]  head: [bold]{head}[/]  {state}")


@cli.command()
@click.option("--json", "as_json", is_flag=True)
def doctor(as_json: bool) -> None:
    """Report the settings in force, the database and its health, and the provider CLIs.

    It only reads: a database that does not exist or is not running is reported,
    never created or started.
    """
    from paperclip.cli.doctor import print_report, problem, run_checks

    report = run_checks(load_settings())
    if as_json:
        emit_json(report)
    else:
        print_report(report)
    if not report["ok"]:
        fail(problem(report))


@cli.group()
def keys() -> None:
    """API keys for the authenticated deployment mode (docs/security.md)."""


@keys.command("create")
@click.argument("name")
@click.option(
    "--company",
    "company_id",
    type=click.UUID,
    help="The company the key belongs to; without it, an instance-admin key.",
)
@click.option(
    "--role",
    type=click.Choice(["admin", "member", "viewer"]),
    help="The role of a company key (default member).",
)
@click.option("--json", "as_json", is_flag=True)
def keys_create(name: str, company_id: uuid.UUID | None, role: str | None, as_json: bool) -> None:
    """Create a key. Its secret is shown once and only its hash is stored.

    Without --company it is an instance-admin key: every company, and creating
    and deleting companies. Only this command makes those.
    """
    from paperclip.errors import PaperclipError
    from paperclip.models import KeyRole

    if company_id is None and role is not None:
        fail("--role is for company keys: add --company ID", code=2)
    key_role = KeyRole(role or "member") if company_id is not None else KeyRole.INSTANCE_ADMIN

    async def work(container: Any) -> tuple[Any, str]:
        return await container.api_keys().create(name, company_id=company_id, role=key_role)

    try:
        key, secret = with_database(load_settings(), work)
    except PaperclipError as exc:
        fail(exc.message)
    if as_json:
        emit_json(
            {
                "id": str(key.id),
                "name": key.name,
                "company_id": str(key.company_id) if key.company_id else None,
                "role": key.role,
                "key": secret,
            }
        )
        return
    console.print(f"created {key.role} key [bold]{key.name}[/] ({key.id})")
    console.print(f"  {secret}")
    console.print("[dim]Store it now: it cannot be shown again.[/]")


@keys.command("list")
@click.option("--json", "as_json", is_flag=True)
def keys_list(as_json: bool) -> None:
    """List every key (never their secrets)."""

    async def work(container: Any) -> list[Any]:
        return await container.api_keys().list_all()

    rows = with_database(load_settings(), work)
    if as_json:
        emit_json(
            [
                {
                    "id": str(k.id),
                    "name": k.name,
                    "company_id": str(k.company_id) if k.company_id else None,
                    "role": k.role,
                    "prefix": k.prefix,
                    "created_at": k.created_at,
                    "last_used_at": k.last_used_at,
                    "revoked_at": k.revoked_at,
                }
                for k in rows
            ]
        )
        return
    from rich.table import Table

    table = Table("id", "name", "company", "role", "prefix", "created", "last used", "revoked")
    for k in rows:
        table.add_row(
            str(k.id),
            k.name,
            str(k.company_id) if k.company_id else "-",
            k.role,
            k.prefix + "…",
            f"{k.created_at:%Y-%m-%d %H:%M}",
            f"{k.last_used_at:%Y-%m-%d %H:%M}" if k.last_used_at else "-",
            f"{k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else "-",
        )
    console.print(table)


@keys.command("revoke")
@click.argument("key_id", type=click.UUID)
@click.option("--json", "as_json", is_flag=True)
def keys_revoke(key_id: uuid.UUID, as_json: bool) -> None:
    """Revoke a key by id; requests with it are refused from now on."""
    from paperclip.errors import PaperclipError

    async def work(container: Any) -> Any:
        return await container.api_keys().revoke(key_id)

    try:
        key = with_database(load_settings(), work)
    except PaperclipError as exc:
        fail(exc.message)
    if as_json:
        emit_json({"id": str(key.id), "revoked_at": key.revoked_at})
    else:
        console.print(f"revoked key [bold]{key.name}[/] ({key.id})")


cli.add_command(chaos)
cli.add_command(stop)
cli.add_command(board)
cli.add_command(plugins)
cli.add_command(runner)
cli.add_command(runners)
# Clients of a running server (--url, PAPERCLIP_URL, PAPERCLIP_API_KEY).
for client_group in (companies, agents, issues, comments, runs, workspace, routines, costs):
    cli.add_command(client_group)


def main() -> None:
    cli()
