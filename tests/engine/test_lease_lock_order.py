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
import contextlib
import uuid
from collections.abc import Awaitable, Mapping

import pytest
from sqlalchemy import text

from paperclip.engine.ownership.fence import lock_fenced, lock_runs
from paperclip.engine.ownership.fenced_tx import FencedTransaction
from paperclip.engine.ownership.leases import renew
from tests.engine.controlled import controlled_runs

INSTANCE = "replica-test"
LOW = uuid.UUID("00000000-0000-4000-8000-000000000001")
HIGH = uuid.UUID("ffffffff-ffff-4fff-bfff-ffffffffffff")

pytestmark = pytest.mark.usefixtures("fixture_kind")


@pytest.fixture
async def runs(paperclip_client, paperclip_container):
    """Two running runs controlled here, written so the table holds the higher id first."""
    await controlled_runs(
        paperclip_client, paperclip_container, [HIGH, LOW], instance=INSTANCE, epoch=1
    )
    yield
    async with paperclip_container.sessions().begin() as session:
        await session.execute(text("DELETE FROM runs WHERE id IN (:a, :b)"), {"a": LOW, "b": HIGH})


@pytest.mark.parametrize("plain", [False, True], ids=["session", "fenced-transaction"])
async def test_a_renewal_and_a_batch_lock_never_wait_on_each_other(
    runs, paperclip_container, plain
):
    sessions = paperclip_container.sessions()
    async with contextlib.AsyncExitStack() as stack:
        # A batch of the inbox or the journal holds the lower id, and will take the higher.
        if plain:
            tx = await stack.enter_async_context(
                FencedTransaction.begin(sessions, {LOW: 1}, instance=INSTANCE)
            )
            locked: Mapping[uuid.UUID, object] = tx.locked

            def lock_higher() -> Awaitable[tuple[Mapping[uuid.UUID, object], object]]:
                return lock_fenced(tx.connection, {HIGH: 1}, instance=INSTANCE)
        else:
            batch = await stack.enter_async_context(sessions.begin())
            locked, _ = await lock_runs(batch, {LOW: 1}, instance=INSTANCE)

            def lock_higher() -> Awaitable[tuple[Mapping[uuid.UUID, object], object]]:
                return lock_runs(batch, {HIGH: 1}, instance=INSTANCE)

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
        locked, _ = await asyncio.wait_for(lock_higher(), timeout=10)
        assert list(locked) == [HIGH]
    assert await asyncio.wait_for(renewing, timeout=10) == {LOW, HIGH}
