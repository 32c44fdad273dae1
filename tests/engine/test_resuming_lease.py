"""A run waiting for a runner to go on is nobody's: no replica renews its lease.

Found under runner SIGKILLs (``paperclip chaos``): a replica adopted a run
through a runner's ``hello`` that still listed it, after the reconciler had
settled the run's lost turn (phase ``resuming``, its next turn queued). The
replica kept renewing the lease for as long as it ran; a scheduler takes a
resuming run only once its lease has lapsed, so the run never went on and
stayed ``running`` (``run_not_terminal``).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from paperclip.engine.connections.lease_keeper import LeaseKeeper
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.recovery.resumption import resumable
from paperclip.models import Run
from tests.engine.controlled import controlled_runs

INSTANCE = "replica-test"

pytestmark = pytest.mark.usefixtures("fixture_kind")


async def test_a_resuming_run_is_let_go_and_a_scheduler_takes_it(
    paperclip_client, paperclip_container
):
    waiting, working = uuid.uuid4(), uuid.uuid4()
    await controlled_runs(
        paperclip_client, paperclip_container, [waiting, working], instance=INSTANCE, epoch=3
    )
    sessions = paperclip_container.sessions()
    soon = datetime.now(UTC) + timedelta(seconds=1)
    async with sessions.begin() as session:
        # What the adoption left: this replica's lease on a run whose next turn waits.
        await session.execute(
            text(
                "UPDATE runs SET phase = CASE WHEN id = :w THEN 'resuming' ELSE 'turn' END, "
                "resumable_since = CASE WHEN id = :w THEN now() END, lease_expires_at = :soon "
                "WHERE id IN (:w, :k)"
            ),
            {"w": waiting, "k": working, "soon": soon},
        )
    ownership = RunOwnership()
    ownership.own(waiting, 3)
    ownership.own(working, 3)
    keeper = LeaseKeeper(
        sessions,
        ownership,
        instance=INSTANCE,
        lease_seconds=30,
        abandon_after=600,
        nudge=lambda: None,
    )

    await keeper.renew_owned()

    assert waiting not in ownership and working in ownership
    async with sessions() as session:
        leases = {
            run.id: run.lease_expires_at
            for run in (
                await session.execute(Run.__table__.select().where(Run.id.in_([waiting, working])))
            ).all()
        }
    assert leases[waiting] == soon  # not extended: it lapses
    assert leases[working] > soon + timedelta(seconds=20)  # renewed, as before

    async def taken() -> bool:
        async with sessions.begin() as session:
            found = (await session.execute(resumable(20))).scalars().all()
            return waiting in {run.id for run in found}

    deadline = asyncio.get_running_loop().time() + 10
    while not await taken():  # a scheduler's query finds it once the lease has lapsed
        assert asyncio.get_running_loop().time() < deadline, "the run was never resumable"
        await asyncio.sleep(0.2)
