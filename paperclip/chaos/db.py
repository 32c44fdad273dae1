"""A raw asyncpg connection to the cluster's database (the processes under test own their engines)."""

from __future__ import annotations

import uuid
from typing import Any


async def connect(url: str) -> Any:
    import asyncpg  # type: ignore[import-untyped]
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    return await asyncpg.connect(
        user=parsed.username,
        password=parsed.password or None,
        database=parsed.database,
        host=parsed.query.get("host", parsed.host),
        port=parsed.port,
        timeout=5,
    )


async def fetch(url: str, sql: str, *args: Any) -> list[Any]:
    """One query's rows, on a connection of its own."""
    conn = await connect(url)
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


async def live_turns(url: str, company_id: str, issues: list[str]) -> list[tuple[str, str]]:
    """(issue, run) of the given issues' runs in a live turn now: those a person may steer."""
    rows = await fetch(
        url,
        "SELECT issue_id, id FROM runs WHERE company_id = $1 AND status = 'running' "
        "AND phase = 'turn' AND issue_id = ANY($2::uuid[])",
        uuid.UUID(company_id),
        [uuid.UUID(i) for i in issues],
    )
    return [(str(r["issue_id"]), str(r["id"])) for r in rows]


async def settled_issues(url: str, company_id: str) -> dict[str, str]:
    """Issue id -> ``succeeded`` (a run of it did) or ``held`` (it has an active hold)."""
    rows = await fetch(
        url,
        "SELECT issue_id, 'succeeded' AS outcome FROM runs WHERE company_id = $1 "
        "AND status = 'succeeded' UNION SELECT issue_id, 'held' FROM task_holds "
        "WHERE company_id = $1 AND status = 'active'",
        uuid.UUID(company_id),
    )
    return {str(r["issue_id"]): r["outcome"] for r in rows}


async def unfinished_runs(url: str, company_id: str) -> int:
    """Runs still queued or running, or succeeded with their answer not presented yet."""
    rows = await fetch(
        url,
        "SELECT count(*) AS n FROM runs WHERE company_id = $1 AND ((status = 'succeeded' "
        "AND answer IS NOT NULL AND presentation IS NULL) OR status IN ('queued', 'running'))",
        uuid.UUID(company_id),
    )
    return int(rows[0]["n"])


async def next_events(url: str, moments: list[Any]) -> list[Any]:
    """For each moment, when the next run event of any run was stored (None: none since)."""
    rows = await fetch(
        url,
        "SELECT t, (SELECT min(created_at) FROM run_events e WHERE e.created_at > t) AS next "
        "FROM unnest($1::timestamptz[]) WITH ORDINALITY AS m(t, n) ORDER BY n",
        moments,
    )
    return [r["next"] for r in rows]
