"""Renewing leases locks runs in the order every other statement does: no deadlock.

The tool journal and the runner inbox lock a batch's runs in id order. The
lease renewal updates every run a replica controls in one statement; an
``UPDATE`` locks rows in the order its plan reads them, which for many runs is
the table's physical order. With 200 runs on one replica (``bench/scale.py``)
the two met: PostgreSQL ended the inbox's transaction with ``deadlock
detected``, and the runner's link dropped with its calls in flight.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import text

from paperclip.engine.fence import lock_runs
from paperclip.engine.leases import renew
from paperclip.models import Run, RunStatus

INSTANCE = "replica-test"
LOW = uuid.UUID("00000000-0000-4000-8000-000000000001")
HIGH = uuid.UUID("ffffffff-ffff-4fff-bfff-ffffffffffff")

pytestmark = pytest.mark.usefixtures("fixture_kind")


@pytest.fixture
async def runs(paperclip_client, paperclip_container):
    """Two running runs controlled here, written so the table holds the higher id first."""
    company = (await paperclip_client.post("/api/companies", json={"name": "Leases"})).json()
    cid = company["id"]
    agent = (
        await paperclip_client.post(
            f"/api/companies/{cid}/agents", json={"name": "a", "provider": "fixture"}
        )
    ).json()
    for run_id in (HIGH, LOW):
        issue = (
            await paperclip_client.post(f"/api/companies/{cid}/issues", json={"title": "task"})
        ).json()
        async with paperclip_container.sessions().begin() as session:
            session.add(
                Run(
                    id=run_id,
                    company_id=uuid.UUID(cid),
                    agent_id=uuid.UUID(agent["id"]),
                    issue_id=uuid.UUID(issue["id"]),
                    provider="codex",
                    status=RunStatus.RUNNING,
                    controller_instance=INSTANCE,
                    controller_epoch=1,
                )
            )
    yield
    async with paperclip_container.sessions().begin() as session:
        await session.execute(text("DELETE FROM runs WHERE id IN (:a, :b)"), {"a": LOW, "b": HIGH})


async def test_a_renewal_and_a_batch_lock_never_wait_on_each_other(runs, paperclip_container):
    sessions = paperclip_container.sessions()
    async with sessions.begin() as batch:
        # A batch of the inbox or the journal holds the lower id, and will take the higher.
        locked, _ = await lock_runs(batch, {LOW: 1}, instance=INSTANCE)
        assert list(locked) == [LOW]

        async def renewal() -> set[uuid.UUID]:
            async with sessions.begin() as session:
                # Read the table in its physical order, as a plan for many runs does.
                await session.execute(text("SET LOCAL enable_indexscan = off"))
                await session.execute(text("SET LOCAL enable_bitmapscan = off"))
                return await renew(session, {LOW: 1, HIGH: 1}, instance=INSTANCE, ttl=30)

        renewing = asyncio.create_task(renewal())
        await asyncio.sleep(0.5)  # the renewal waits for the lower id
        assert not renewing.done()
        # Without the one lock order, the renewal holds the higher id here: PostgreSQL
        # finds the cycle after its deadlock_timeout and ends one of the two.
        locked, _ = await asyncio.wait_for(
            lock_runs(batch, {HIGH: 1}, instance=INSTANCE), timeout=10
        )
        assert list(locked) == [HIGH]
    assert await asyncio.wait_for(renewing, timeout=10) == {LOW, HIGH}
