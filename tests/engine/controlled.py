"""Running runs controlled by a test's replica, written straight to the database (no runner)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import httpx

from paperclip.models import Run, RunStatus


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
