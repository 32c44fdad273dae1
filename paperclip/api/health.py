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
    workspace_bytes: int | None = None
    """Disk the runners' worktrees and clone mirrors use, as each last reported it."""
    workspace_count: int | None = None
    """Worktrees on the runners, as each last reported it."""


WORKSPACE_DISK = text(
    "SELECT sum(workspace_bytes)::bigint, sum(workspace_count)::bigint FROM runners"
    " WHERE revoked_at IS NULL"
)


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
    disk: Any = (None, None)
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
            latency = round((time.perf_counter() - started) * 1000, 2)
            disk = (await conn.execute(WORKSPACE_DISK)).one()
        db = DatabaseHealth("ok", kind, latency)
    except Exception as exc:  # any failure to reach it is the answer, not an error
        db = DatabaseHealth("unavailable", kind, error=type(exc).__name__)
    runners = RunnerHealth(len(state.run_engine.connections.links), *disk)
    body = Health("ok" if db.status == "ok" else "degraded", paperclip.__version__, db, runners)
    return Response(body, status_code=200 if db.status == "ok" else 503)
