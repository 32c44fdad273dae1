from __future__ import annotations

import time
from typing import Any, Literal

import msgspec
from litestar import Response, get
from litestar.datastructures import State
from litestar.openapi.datastructures import ResponseSpec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

import paperclip
from paperclip.api.access import Access, access


class DatabaseHealth(msgspec.Struct):
    status: Literal["ok", "unavailable"]
    kind: Literal["embedded", "external"]
    latency_ms: float | None = None
    error: str | None = None


class RunnerHealth(msgspec.Struct):
    connected_here: int
    """Runner connections this replica holds."""


class Health(msgspec.Struct):
    status: Literal["ok", "degraded"]
    version: str
    database: DatabaseHealth
    runners: RunnerHealth


@get(
    "/health",
    tags=["health"],
    opt=access(Access.PUBLIC),
    responses={
        503: ResponseSpec(
            data_container=Health, description="database unavailable", generate_examples=False
        )
    },
)
async def health(state: State) -> Response[Health]:
    """Liveness and the database's status; 503 when the database does not answer."""
    engine: AsyncEngine = state.engine
    kind: Any = "external" if state.settings.database_url else "embedded"
    started = time.perf_counter()
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        db = DatabaseHealth("ok", kind, round((time.perf_counter() - started) * 1000, 2))
    except Exception as exc:  # any failure to reach it is the answer, not an error
        db = DatabaseHealth("unavailable", kind, error=type(exc).__name__)
    runners = RunnerHealth(len(state.run_engine.connections.links))
    body = Health("ok" if db.status == "ok" else "degraded", paperclip.__version__, db, runners)
    return Response(body, status_code=200 if db.status == "ok" else 503)
