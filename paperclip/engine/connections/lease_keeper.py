"""The keeper of this replica's leases: renewed every third of a lease; runs nobody came back for, ended.

The replica holding a runner's connection controls that runner's runs, so the
keeper lives with the connections; the lease statements are ``ownership.leases``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.engine.endings.turn_end import finish_run
from paperclip.engine.loop import keep_running
from paperclip.engine.ownership.fence import lock_run
from paperclip.engine.ownership.leases import ACTIVE, adopt, in_id_order, renew
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.models import Run, RunStatus

log = logging.getLogger(__name__)

ABANDON_BATCH = 20


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
        ends_abandoned: bool = True,
    ) -> None:
        self.sessions = sessions
        self.ownership = ownership
        self.instance = instance
        self.ttl = lease_seconds
        self.abandon_after = abandon_after
        """Seconds past a lease's expiry after which a run with no runner is failed."""
        self.nudge = nudge
        self.ends_abandoned = ends_abandoned
        """False when a recovery policy settles lost runs: two paths must not race to end one."""

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
        if self.ends_abandoned:
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
            # Adopted elsewhere, ended, or waiting for a runner to go on (nobody's).
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
