"""Running runs controlled by a test's replica, written straight to the database (no runner),
and the engine's call pipeline controlling them, with a runner link in memory."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import httpx

from paperclip.engine.calls.pipeline import CallPipeline
from paperclip.engine.links.gate import ControlGate
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.models import Run, RunStatus
from paperclip.plugin_host import PluginHost
from tests.support.memory import MemoryTransport


async def controlled_runs(
    client: httpx.AsyncClient,
    container: object,
    ids: Sequence[uuid.UUID],
    *,
    instance: str,
    epoch: int,
) -> list[uuid.UUID]:
    """Runs of one agent, each on an issue of its own, controlled by ``instance`` at ``epoch``.

    Written in the order of ``ids``, one transaction each, so the table holds
    them in that physical order.
    """
    company = (await client.post("/api/companies", json={"name": "Controlled"})).json()
    cid = uuid.UUID(company["id"])
    agent = (
        await client.post(f"/api/companies/{cid}/agents", json={"name": "a", "provider": "fixture"})
    ).json()
    for run_id in ids:
        issue = (await client.post(f"/api/companies/{cid}/issues", json={"title": "task"})).json()
        async with container.sessions().begin() as session:  # type: ignore[attr-defined]
            session.add(
                Run(
                    id=run_id,
                    company_id=cid,
                    agent_id=uuid.UUID(agent["id"]),
                    issue_id=uuid.UUID(issue["id"]),
                    provider="codex",
                    status=RunStatus.RUNNING,
                    controller_instance=instance,
                    controller_epoch=epoch,
                )
            )
    return list(ids)


async def pipeline_with_link(
    container: Any,
    plugins: PluginHost,
    ownership: RunOwnership,
    *,
    instance: str,
    features: frozenset[str] = frozenset(),
) -> tuple[CallPipeline, RunnerLink, MemoryTransport]:
    """The call pipeline of ``instance`` (its runs those ``ownership`` holds), a new runner's
    link in memory (speaking ``features``), and that link's transport (what the runner would
    receive)."""
    sessions = container.sessions()
    pipeline = CallPipeline(
        sessions, ownership, ControlGate(sessions, ownership), plugins, instance=instance
    )
    runner, _ = await container.runners().create(f"runner-{uuid.uuid4().hex[:6]}")
    transport = MemoryTransport()
    link = RunnerLink(
        runner.id,
        "runner-1",
        transport,
        {"codex"},
        sessions,
        last_in=0,
        last_sent=0,
        features=features,
    )
    return pipeline, link, transport
