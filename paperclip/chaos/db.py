"""A raw asyncpg connection to the cluster's database (the processes under test own their engines)."""

from __future__ import annotations

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
