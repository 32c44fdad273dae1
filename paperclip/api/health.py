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
from paperclip.http.access import Access, access
from paperclip.plugin_host import PluginHost
from paperclip.plugin_host.seed_policies import policies_off


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


class PolicyOffHealth(msgspec.Struct):
    """A seed's recovery policy that is off: what stops holding after a restart."""

    distribution: str
    seed: str
    why: str
    """``disabled``, ``not_allowed``, ``not_installed``, or the code of the failure that kept its
    plugin from loading (``import_error``, ...)."""
    setting: str | None
    """The setting that turned it off (``PAPERCLIP_PLUGINS_DISABLE``, ``PAPERCLIP_PLUGINS_ONLY``)."""
    without: str


class Health(msgspec.Struct):
    status: Literal["ok", "degraded"]
    """``degraded``: the database does not answer (503), or a recovery policy is off (200)."""
    version: str
    database: DatabaseHealth
    runners: RunnerHealth
    recovery_policies_off: list[PolicyOffHealth] = msgspec.field(default_factory=list)
    """The seeds' recovery policies that are off (docs/recovery.md); empty in a default install."""


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
async def health(state: State, plugin_host: PluginHost) -> Response[Health]:
    """Liveness, the database's status and the recovery policies that are off.

    503 when the database does not answer. A policy that is off makes the status
    ``degraded`` but keeps 200: the replica serves, and a load balancer keeps it.
    """
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
    off = [
        PolicyOffHealth(p.policy.distribution, p.policy.seed, p.why, p.setting, p.policy.without)
        for p in policies_off(plugin_host)
    ]
    status: Any = "ok" if db.status == "ok" and not off else "degraded"
    body = Health(status, paperclip.__version__, db, runners, off)
    return Response(body, status_code=200 if db.status == "ok" else 503)
