"""Run-controller leases: adopt (bumping the epoch), renew, release; and the keeper that renews them."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import ColumnElement, Select, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.engine.endings import finish_run
from paperclip.engine.fence import lock_run
from paperclip.engine.loop import keep_running
from paperclip.engine.ownership import RunOwnership
from paperclip.models import ACTIVE_RUN_STATUSES, Run, RunStatus

log = logging.getLogger(__name__)

ACTIVE = ACTIVE_RUN_STATUSES
ABANDON_BATCH = 20


async def adopt(
    session: AsyncSession, run_id: uuid.UUID, *, instance: str, ttl: float
) -> int | None:
    """Become the run's controller if it has none or its lease expired; the new epoch, or None.

    The epoch moves on every adoption, so the earlier owner's writes are
    refused from now on even if it is still alive (the owner-gone proof is
    the expired lease plus this bumped fence).
    """
    epoch = (
        await session.execute(
            update(Run)
            .where(
                Run.id == run_id,
                Run.status.in_(ACTIVE),
                or_(
                    Run.controller_instance.is_(None),
                    Run.lease_expires_at.is_(None),
                    Run.lease_expires_at < func.now(),
                ),
            )
            .values(
                controller_instance=instance,
                controller_epoch=Run.controller_epoch + 1,
                lease_expires_at=func.now() + timedelta(seconds=ttl),
            )
            .returning(Run.controller_epoch)
        )
    ).scalar_one_or_none()
    return epoch


def in_id_order(*where: ColumnElement[bool]) -> Select[tuple[uuid.UUID]]:
    """The ids of the runs matching ``where``, locked in id order.

    An ``UPDATE`` of many runs locks them in whatever order its plan reads them
    (a bitmap or sequential scan: the table's physical order), while the tool
    journal and the inbox lock theirs in id order; two such statements wait on
    each other and PostgreSQL ends one with a deadlock. Taking the locks here
    first, in the one order every statement uses, leaves no cycle.
    """
    return select(Run.id).where(*where).order_by(Run.id).with_for_update()


async def renew(
    session: AsyncSession, owned: dict[uuid.UUID, int], *, instance: str, ttl: float
) -> set[uuid.UUID]:
    """Extend the leases this controller still holds; return the runs it holds."""
    if not owned:
        return set()
    held = in_id_order(
        Run.id.in_(list(owned)), Run.controller_instance == instance, Run.status.in_(ACTIVE)
    )
    rows = await session.execute(
        update(Run)
        .where(Run.id.in_(held))
        .values(lease_expires_at=func.now() + timedelta(seconds=ttl))
        .returning(Run.id, Run.controller_epoch)
    )
    return {run_id for run_id, epoch in rows if owned.get(run_id) == epoch}


async def release(session: AsyncSession, run_ids: list[uuid.UUID], *, instance: str) -> None:
    """Let another replica adopt these runs now instead of after the lease (orderly handover)."""
    if run_ids:
        held = in_id_order(Run.id.in_(run_ids), Run.controller_instance == instance)
        await session.execute(
            update(Run).where(Run.id.in_(held)).values(lease_expires_at=func.now())
        )


class LeaseKeeper:
    """Renews the leases of the runs this replica controls, and ends runs nobody came back for."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        ownership: RunOwnership,
        *,
        instance: str,
        lease_seconds: float,
        abandon_after: float,
        nudge: Callable[[], None],
    ) -> None:
        self.sessions = sessions
        self.ownership = ownership
        self.instance = instance
        self.ttl = lease_seconds
        self.abandon_after = abandon_after
        """Seconds past a lease's expiry after which a run with no runner is failed."""
        self.nudge = nudge

    async def run(self) -> None:
        """Every third of a lease: end abandoned runs, then renew; until cancelled."""
        await keep_running(
            self._keep,
            every=self.ttl / 3,
            first_wait=True,
            log=log,
            failure="renewing leases failed",
        )

    async def _keep(self) -> None:
        with contextlib.suppress(Exception):  # its own pass: renewing matters more
            await self.fail_abandoned_runs()
        await self.renew_owned()

    async def renew_owned(self) -> None:
        owned = self.ownership.snapshot()
        if not owned:
            return
        async with self.sessions.begin() as session:
            held = await renew(session, owned, instance=self.instance, ttl=self.ttl)
        for run_id in set(owned) - held:
            log.warning("lost the lease of run %s", run_id)
            self.ownership.release(run_id, epoch=owned[run_id])

    async def release_all(self) -> None:
        """Orderly handover: another replica may adopt at once instead of after the lease.

        Every lease this replica holds in the database goes, not only those it
        knows of: a pass cancelled between its adoption's commit and its
        bookkeeping holds a lease nothing here would renew or release.
        """
        async with self.sessions.begin() as session:
            held = in_id_order(
                Run.controller_instance == self.instance, Run.lease_expires_at > func.now()
            )
            await session.execute(
                update(Run).where(Run.id.in_(held)).values(lease_expires_at=func.now())
            )
        for run_id in self.ownership.runs():
            self.ownership.release(run_id)

    async def fail_abandoned_runs(self) -> int:
        """End runs whose controller lease ran out long ago with no runner coming back for them.

        The run is adopted first (the epoch moves, fencing any late writer out),
        then failed with ``runner_unavailable``; its issue goes back to the queue.
        """
        async with self.sessions.begin() as session:
            stale = list(
                (
                    await session.execute(
                        select(Run.id)
                        .where(
                            Run.status.in_(ACTIVE),
                            # A run waiting for a runner to go on is recovery's to settle.
                            Run.phase == "turn",
                            Run.lease_expires_at
                            < func.now() - timedelta(seconds=self.abandon_after),
                        )
                        .with_for_update(skip_locked=True)
                        .limit(ABANDON_BATCH)
                    )
                ).scalars()
            )
        ended = 0
        for run_id in stale:
            async with self.sessions.begin() as session:
                epoch = await adopt(session, run_id, instance=self.instance, ttl=self.ttl)
                if epoch is None:
                    continue
                run = await lock_run(session, run_id, instance=self.instance, epoch=epoch)
                ended += await finish_run(
                    session,
                    run,
                    RunStatus.FAILED,
                    error_code="runner_unavailable",
                    error_message=f"no runner reported for this run for {self.abandon_after:g} s",
                )
        if ended:
            log.warning("ended %s run(s) whose runner never came back", ended)
            self.nudge()
        return ended
