"""Run-controller leases: adopt (bumping the epoch), renew, release.

``adopt`` is the one place a run changes hands: every takeover (a runner's
``hello``, a queued turn resumed or ended for its budget, an abandoned run
ended, a recovery policy) goes through it, ``take_over`` for a row the caller
has loaded, so the epoch moves the same way everywhere.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import ColumnElement, Select, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.engine.ownership.fence import RUN_LOCK
from paperclip.models import ACTIVE_RUN_STATUSES, Run

ACTIVE = ACTIVE_RUN_STATUSES


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


async def take_over(session: AsyncSession, run: Run, *, instance: str, ttl: float) -> int | None:
    """``adopt`` for a run the caller has loaded (and locked): the row it holds follows.

    The statement is ``adopt``'s, so the epoch moves in one place only; the
    loaded row's controller columns are read back, not left stale.
    """
    epoch = await adopt(session, run.id, instance=instance, ttl=ttl)
    if epoch is not None:
        await session.refresh(run, ["controller_instance", "controller_epoch", "lease_expires_at"])
    return epoch


def in_id_order(*where: ColumnElement[bool]) -> Select[tuple[uuid.UUID]]:
    """The ids of the runs matching ``where``, locked in id order.

    An ``UPDATE`` of many runs locks them in whatever order its plan reads them
    (a bitmap or sequential scan: the table's physical order), while the tool
    journal and the inbox lock theirs in id order; two such statements wait on
    each other and PostgreSQL ends one with a deadlock. Taking the locks here
    first, in the one order every statement uses, leaves no cycle.
    """
    return select(Run.id).where(*where).order_by(Run.id).with_for_update(**RUN_LOCK)


async def renew(
    session: AsyncSession, owned: dict[uuid.UUID, int], *, instance: str, ttl: float
) -> set[uuid.UUID]:
    """Extend the leases this controller still holds; return the runs it holds.

    A run waiting for a runner to go on (phase ``resuming``) is nobody's: its
    lease is not extended, so it lapses and any replica's scheduler takes the
    run. A replica that adopted such a run (a runner's ``hello`` listed it
    before its lost turn was settled) would otherwise keep it from every
    scheduler, for as long as it runs.
    """
    if not owned:
        return set()
    held = in_id_order(
        Run.id.in_(list(owned)),
        Run.controller_instance == instance,
        Run.status.in_(ACTIVE),
        Run.phase != "resuming",
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
