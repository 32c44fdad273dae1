"""``paperclip doctor``: the settings in force, the database and its health, the provider CLIs.

It only reads. An embedded database that does not exist yet, or is not
running, is reported as such: doctor neither creates nor starts it (that is
``paperclip serve``'s job). A running one, or an external one, is asked for
its version and schema revision.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url

import paperclip
from paperclip.settings import Settings


def run_checks(settings: Settings, plugin_host: Any = None) -> dict[str, Any]:
    from paperclip.plugin_host import PluginHost

    host = plugin_host if plugin_host is not None else PluginHost.from_settings(settings)
    database = (
        external_database(settings.database_url)
        if settings.database_url
        else embedded_database(settings)
    )
    return {
        "version": paperclip.__version__,
        "deployment_mode": settings.deployment_mode.value,
        "bind": f"{settings.host}:{settings.port}",
        "data_dir": str(settings.data_dir),
        "database": database,
        "providers": provider_clis(settings, host),
        "recovery_policies": recovery_policies(host),
        "workspaces": local_workspaces(settings),
        "ok": database["status"] in {"ok", "stopped", "not_created"},
    }


def recovery_policies(host: Any) -> list[dict[str, Any]]:
    """Each seed's recovery policy, whether a loaded plugin provides it, and if not why not
    (a warning: the default install has them all)."""
    from paperclip.plugin_host.seed_policies import SEED_POLICIES, policies_off

    off = {item.policy: item for item in policies_off(host)}
    return [
        {
            "distribution": p.distribution,
            "seed": p.seed,
            "installed": p not in off,
            "off": off[p].why if p in off else None,
            "setting": off[p].setting if p in off else None,
            "reason": off[p].reason if p in off else None,
            "without": p.without,
        }
        for p in SEED_POLICIES
    ]


def problem(report: dict[str, Any]) -> str:
    """What makes the report not ok, in one line with what to do."""
    db = report["database"]
    if db["kind"] == "external":
        todo = (
            "Check that PostgreSQL runs there and accepts this user, or fix "
            "PAPERCLIP_DATABASE_URL (unset: the embedded PostgreSQL)."
        )
    else:
        todo = "Check PAPERCLIP_DATA_DIR; `paperclip serve` creates and starts it."
    return f"the database at {db['location']} is {db['status']}: {db.get('error')}. {todo}"


def local_workspaces(settings: Settings) -> dict[str, Any]:
    """The local runner's worktrees and mirrors, the disk they use, and what its host allows."""
    from paperclip.runner.workspaces.disk import usage

    work_dir = settings.data_dir / "runner"
    measured = usage(work_dir)
    return {
        "work_dir": str(work_dir),
        "worktrees": measured.workspace_count,
        "workspace_bytes": measured.workspace_bytes,
        "mirror_bytes": measured.mirror_bytes,
        "roots": list(settings.runner_workspace_roots),
        "remotes": list(settings.runner_workspace_remotes),
    }


def external_database(url: str) -> dict[str, Any]:
    report: dict[str, Any] = {"kind": "external", "location": redact(url)}
    return report | probe_database(url)


def embedded_database(settings: Settings) -> dict[str, Any]:
    from paperclip.db.access import (
        EmbeddedDatabaseError,
        require_private,
        require_reachable,
        server_user,
    )
    from paperclip.db.embedded import DATABASE_NAME, running_socket_dir, socket_url

    pgdata = settings.pgdata
    report: dict[str, Any] = {"kind": "embedded", "location": str(pgdata)}
    try:
        require_reachable(pgdata.parent, server_user(), "data folder")
    except (EmbeddedDatabaseError, KeyError) as exc:
        return report | {"status": "unusable", "error": str(exc)}
    version_file = pgdata / "PG_VERSION"
    if not version_file.exists():
        return report | {
            "status": "not_created",
            "note": "`paperclip serve` creates it on first start",
        }
    report["server_major_version"] = version_file.read_text().strip()
    socket_dir = running_socket_dir(pgdata)
    if socket_dir is None:
        return report | {"status": "stopped", "note": "`paperclip serve` starts it"}
    try:
        require_private(socket_dir, server_user(), "socket folder")
    except (EmbeddedDatabaseError, OSError) as exc:
        return report | {"status": "unusable", "error": str(exc)}
    return report | probe_database(socket_url(socket_dir, DATABASE_NAME))


def probe_database(url: str) -> dict[str, Any]:
    """Version, round-trip time and schema revision: reads only."""
    from paperclip.db import migrate
    from paperclip.db.engine import create_engine

    async def probe() -> tuple[str, float]:
        engine = create_engine(url, pool_size=1)
        try:
            started = time.perf_counter()
            async with engine.connect() as conn:
                version = (await conn.execute(text("SHOW server_version"))).scalar_one()
            return str(version), (time.perf_counter() - started) * 1000
        finally:
            await engine.dispose()

    try:
        version, latency = asyncio.run(probe())
        current, head = migrate.current_revision(url), migrate.head_revision()
    except Exception as exc:  # the report is the product here: say what failed
        return {"status": "unavailable", "error": f"{type(exc).__name__}: {exc}"}
    return {
        "status": "ok",
        "server_version": version,
        "latency_ms": round(latency, 2),
        "revision": current,
        "head": head,
        "up_to_date": current == head,
    }


def provider_clis(settings: Settings, host: Any) -> list[dict[str, Any]]:
    """Each installed provider kind's CLI, for each launch profile the local runner would use."""
    from paperclip.runner.launch import LaunchPolicy

    kinds = {kind.name: kind for kind in host.providers()}
    policy = LaunchPolicy.build(kinds, settings.runner_launch)
    found = []
    for provider in sorted(policy.profiles):
        kind = kinds.get(provider)
        for profile, command in sorted(policy.profiles[provider].items()):
            entry: dict[str, Any] = {
                "provider": provider,
                "profile": profile,
                "command": list(command),
                "found": None,
                "version": None,
                "path": None,
                "hint": "",
            }
            if kind is None:
                entry["hint"] = (
                    f"PAPERCLIP_RUNNER_LAUNCH names {provider!r}, which is not installed"
                )
            elif kind.probe is None:
                entry["hint"] = "this provider plugin cannot check its CLI"
            else:
                try:
                    probe = kind.probe(command)
                except Exception as exc:  # a plugin's failure is reported, never fatal
                    entry |= {
                        "found": False,
                        "hint": f"its probe failed: {type(exc).__name__}: {exc}",
                    }
                else:
                    entry |= {
                        "found": probe.found,
                        "version": probe.version,
                        "path": probe.path,
                        "hint": probe.hint,
                    }
            found.append(entry)
    return found


def redact(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def print_report(report: dict[str, Any]) -> None:
    from rich.markup import escape

    from paperclip.cli_kit.output import console

    db = report["database"]
    marks = {
        "ok": "[green]ok[/]",
        "stopped": "[yellow]stopped[/]",
        "not_created": "[yellow]not created yet[/]",
    }
    console.print(
        f"paperclip {report['version']}  mode {report['deployment_mode']}  bind {report['bind']}"
    )
    console.print(
        f"database: {db['kind']} at {db['location']}: {marks.get(db['status'], '[red]' + db['status'] + '[/]')}"
    )
    if db["status"] == "ok":
        console.print(f"  PostgreSQL {db['server_version']}, {db['latency_ms']} ms")
        state = "up to date" if db["up_to_date"] else "behind: run `paperclip db upgrade`"
        console.print(f"  schema {db['revision']} (head {db['head']}): {state}")
    elif db.get("note"):
        console.print(f"  {escape(db['note'])}")
    else:
        console.print(f"  [red]{escape(str(db.get('error')))}[/]")
    ws = report["workspaces"]
    console.print(
        f"workspaces: {ws['worktrees']} worktrees, "
        f"{(ws['workspace_bytes'] + ws['mirror_bytes']) / 1e6:.1f} MB in {escape(ws['work_dir'])}"
    )
    allowed = ", ".join(ws["roots"]) or "none (PAPERCLIP_RUNNER_WORKSPACE_ROOTS)"
    console.print(f"  repository folders allowed: {escape(allowed)}")
    patterns = ", ".join(ws["remotes"]) or "none (PAPERCLIP_RUNNER_WORKSPACE_REMOTES)"
    console.print(f"  clone URLs allowed: {escape(patterns)}")
    off = [p for p in report["recovery_policies"] if not p["installed"]]
    if off:
        console.print("[yellow]recovery policies off[/] (a restart then loses work):")
        for policy in off:
            console.print(
                f"  [yellow]warning[/]: {policy['distribution']} is off "
                f"({escape(policy['reason'])}): after a restart, {escape(policy['without'])}"
            )
        # The core's default install has them all (pyproject.toml, docs/recovery.md).
        console.print(
            "  they are part of the default install: unset the setting that turns one off, "
            "or reinstall paperclip-control-plane"
        )
    console.print("provider CLIs (the local runner's launch profiles):")
    if not report["providers"]:
        console.print("  none: no provider plugin is installed")
    for cli in report["providers"]:
        state = (
            f"[green]{escape(cli['version'] or 'found')}[/] at {escape(cli['path'] or '?')}"
            if cli["found"]
            else "[red]missing[/]"
            if cli["found"] is False
            else "[yellow]unknown[/]"
        )
        line = f"  {cli['provider']}/{cli['profile']}: {escape(' '.join(cli['command']))}: {state}"
        console.print(line)
        if cli["hint"] and not cli["found"]:
            console.print(f"    [dim]{escape(cli['hint'])}[/]")
