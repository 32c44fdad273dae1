"""``paperclip runner`` (the runner process) and ``paperclip runners`` (their credentials)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import uuid
from collections.abc import Coroutine
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from paperclip.cli_kit.output import console, emit_json, fail
from paperclip.cli_kit.settings import load_settings


@click.command("runner")
@click.option(
    "--server",
    "servers",
    multiple=True,
    required=True,
    envvar="PAPERCLIP_RUNNER_SERVER",
    help="Control-plane URL (http://host:port); repeat for replicas. Env: PAPERCLIP_RUNNER_SERVER "
    "(space-separated).",
)
@click.option(
    "--credential-file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="PAPERCLIP_RUNNER_CREDENTIAL_FILE",
    help="File holding the runner credential.",
)
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="PAPERCLIP_RUNNER_WORK_DIR",
    help="Where runs get their working folders.",
)
def runner(servers: tuple[str, ...], credential_file: Path | None, work_dir: Path | None) -> None:
    """Host provider processes for the control plane (until SIGTERM or Ctrl-C).

    The credential comes from PAPERCLIP_RUNNER_CREDENTIAL or --credential-file;
    create one with `paperclip runners create NAME`.
    """
    from paperclip.logging import configure_logging
    from paperclip.plugin_host import PluginHost
    from paperclip.runner.isolation import AgentUser, IsolationError
    from paperclip.runner.launch import LaunchPolicy
    from paperclip.runner.models import ModelPolicy
    from paperclip.runner.runtime import RunnerProcess
    from paperclip.runner.workspace_host import WorkspaceHost
    from paperclip.runner.workspaces.policy import WorkspacePolicy

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    credential = os.environ.get("PAPERCLIP_RUNNER_CREDENTIAL", "")
    if credential_file is not None:
        credential = credential_file.read_text().strip()
    if not credential:
        fail(
            "no runner credential",
            hint="Set PAPERCLIP_RUNNER_CREDENTIAL or --credential-file; "
            "`paperclip runners create NAME` makes one.",
            code=2,
        )
    try:
        agents = AgentUser.choose(settings.runner_agent_user)
    except IsolationError as exc:
        fail(str(exc), code=2)
    urls = [u for s in servers for u in s.split()]
    plugins = PluginHost.from_settings(settings)
    kinds = {kind.name: kind for kind in plugins.providers()}
    folder = work_dir or settings.data_dir / "runner"
    runtime = RunnerProcess(
        urls,
        credential,
        work_dir=folder,
        providers=kinds,
        launch=LaunchPolicy.build(kinds, settings.runner_launch),
        tools=plugins.tool_specs(),
        models=ModelPolicy.build(settings.runner_models),
        agents=agents,
        workspaces=WorkspaceHost(
            folder,
            WorkspacePolicy.build(
                settings.runner_workspace_roots, settings.runner_workspace_remotes
            ),
            diff_limit=settings.runner_diff_limit_bytes,
            run_retention=timedelta(hours=settings.runner_run_retention_hours),
        ),
    )

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: asyncio.ensure_future(runtime.stop()))
        await runtime.run()

    run_event_loop(main())


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run on uvloop where it is installed (as ``serve`` does, through uvicorn), else asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


@click.group("runners")
def runners() -> None:
    """Runner credentials."""


@runners.command("create")
@click.argument("name", default=lambda: f"runner-{socket.gethostname()}")
@click.option("--json", "as_json", is_flag=True)
def runners_create(name: str, as_json: bool) -> None:
    """Register a runner; its credential is shown once."""
    from paperclip.cli.context import with_database

    async def work(container: Any) -> tuple[Any, str]:
        return await container.runners().create(name)

    from paperclip.errors import PaperclipError

    try:
        row, secret = with_database(load_settings(), work)
    except PaperclipError as exc:
        fail(exc.message)
    if as_json:
        emit_json({"id": str(row.id), "name": row.name, "credential": secret})
        return
    console.print(f"created runner [bold]{row.name}[/] ({row.id})")
    console.print(f"  {secret}")
    console.print(
        "[dim]Give it to the runner as PAPERCLIP_RUNNER_CREDENTIAL; it is not shown again.[/]"
    )


@runners.command("list")
@click.option("--json", "as_json", is_flag=True)
def runners_list(as_json: bool) -> None:
    """List runners and where they are connected."""
    from paperclip.cli.context import with_database

    async def work(container: Any) -> list[Any]:
        return await container.runners().list()

    rows = with_database(load_settings(), work)
    data = [
        {
            "id": str(r.id),
            "name": r.name,
            "instance": r.instance,
            "replica": r.replica,
            "last_seen_at": r.last_seen_at,
            "revoked_at": r.revoked_at,
        }
        for r in rows
    ]
    if as_json:
        emit_json(data)
        return
    from rich.table import Table

    table = Table("id", "name", "instance", "replica", "last seen", "revoked")
    for r in data:
        table.add_row(
            *(
                str(r[k] or "-")
                for k in ("id", "name", "instance", "replica", "last_seen_at", "revoked_at")
            )
        )
    console.print(table)


@runners.command("revoke")
@click.argument("runner_id", type=click.UUID)
def runners_revoke(runner_id: uuid.UUID) -> None:
    """Revoke a runner's credential; it can no longer connect."""
    from paperclip.cli.context import with_database
    from paperclip.errors import NotFoundError

    async def work(container: Any) -> Any:
        return await container.runners().revoke(runner_id)

    try:
        row = with_database(load_settings(), work)
    except NotFoundError as exc:
        fail(exc.message)
    console.print(f"revoked runner [bold]{row.name}[/]")
