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


async def live_turns(url: str, company_id: str, issues: list[str]) -> list[tuple[str, str]]:
    """(issue, run) of the given issues' runs in a live turn now: those a person may steer."""
    conn = await connect(url)
    try:
        rows = await conn.fetch(
            "SELECT issue_id, id FROM runs WHERE company_id = $1 AND status = 'running' "
            "AND phase = 'turn' AND issue_id = ANY($2::uuid[])",
            uuid.UUID(company_id),
            [uuid.UUID(i) for i in issues],
        )
    finally:
        await conn.close()
    return [(str(r["issue_id"]), str(r["id"])) for r in rows]
