"""``paperclip doctor``: which database is in use, and whether it is healthy."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url

import paperclip
from paperclip.settings import Settings


def run_checks(settings: Settings) -> dict[str, Any]:
    from paperclip.container import Container
    from paperclip.db import migrate
    from paperclip.db.engine import create_engine

    report: dict[str, Any] = {
        "version": paperclip.__version__,
        "deployment_mode": settings.deployment_mode.value,
        "bind": f"{settings.host}:{settings.port}",
        "data_dir": str(settings.data_dir),
        "database": {
            "kind": "external" if settings.database_url else "embedded",
            "location": redact(settings.database_url)
            if settings.database_url
            else str(settings.pgdata),
        },
        "ok": False,
    }
    container = Container(settings=settings)
    try:
        container.init_resources()
    except Exception as exc:  # the report is the product here: say what failed
        report["database"].update(status="unavailable", error=f"{type(exc).__name__}: {exc}")
        return report
    try:
        url = container.database_url()

        async def probe() -> tuple[str, float]:
            engine = create_engine(url, pool_size=1)
            try:
                started = time.perf_counter()
                async with engine.connect() as conn:
                    version = (await conn.execute(text("SHOW server_version"))).scalar_one()
                return str(version), (time.perf_counter() - started) * 1000
            finally:
                await engine.dispose()

        version, latency = asyncio.run(probe())
        current, head = migrate.current_revision(url), migrate.head_revision()
        report["database"].update(
            status="ok",
            server_version=version,
            latency_ms=round(latency, 2),
            revision=current,
            head=head,
            up_to_date=current == head,
        )
        report["ok"] = True
    except Exception as exc:
        report["database"].update(status="unavailable", error=f"{type(exc).__name__}: {exc}")
    finally:
        container.shutdown_resources()
    return report


def redact(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def print_report(report: dict[str, Any]) -> None:
    from paperclip.cli.output import console

    db = report["database"]
    mark = "[green]ok[/]" if db.get("status") == "ok" else "[red]unavailable[/]"
    console.print(
        f"paperclip {report['version']}  mode {report['deployment_mode']}  bind {report['bind']}"
    )
    console.print(f"database: {db['kind']} at {db['location']}: {mark}")
    if db.get("status") == "ok":
        console.print(f"  PostgreSQL {db['server_version']}, {db['latency_ms']} ms")
        state = "up to date" if db["up_to_date"] else "behind: run `paperclip db upgrade`"
        console.print(f"  schema {db['revision']} (head {db['head']}): {state}")
    else:
        console.print(f"  [red]{db.get('error')}[/]")
