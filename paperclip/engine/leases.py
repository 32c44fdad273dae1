"""Run-controller leases: claim (or adopt, bumping the epoch), renew, release."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import func, or_, update
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.models import Run, RunStatus

ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


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


async def renew(
    session: AsyncSession, owned: dict[uuid.UUID, int], *, instance: str, ttl: float
) -> set[uuid.UUID]:
    """Extend the leases this controller still holds; return the runs it holds."""
    if not owned:
        return set()
    rows = await session.execute(
        update(Run)
        .where(Run.id.in_(list(owned)), Run.controller_instance == instance, Run.status.in_(ACTIVE))
        .values(lease_expires_at=func.now() + timedelta(seconds=ttl))
        .returning(Run.id, Run.controller_epoch)
    )
    return {run_id for run_id, epoch in rows if owned.get(run_id) == epoch}


async def release(session: AsyncSession, run_ids: list[uuid.UUID], *, instance: str) -> None:
    """Let another replica adopt these runs now instead of after the lease (orderly handover)."""
    if run_ids:
        await session.execute(
            update(Run)
            .where(Run.id.in_(run_ids), Run.controller_instance == instance)
            .values(lease_expires_at=func.now())
        )
