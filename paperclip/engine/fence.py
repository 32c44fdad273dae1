"""The epoch fence: a controller's writes for a run are refused once another controller adopted it."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.errors import ConflictError, NotFoundError
from paperclip.models import Run


class StaleEpochError(ConflictError):
    """This controller's epoch is no longer the run's: it may not write for it."""

    code = "stale_controller_epoch"


async def lock_run(session: AsyncSession, run_id: uuid.UUID, *, instance: str, epoch: int) -> Run:
    """Lock the run's row and check the fence; every controller write starts here.

    The row lock serializes a run's writers, and a controller that lost the run
    (its lease expired and another replica bumped the epoch) is refused here,
    inside the same transaction as the write it wanted to make.
    """
    run = (
        await session.execute(
            select(Run)
            .where(Run.id == run_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    ).scalar_one_or_none()
    if run is None:
        raise NotFoundError.of("run", run_id)
    if run.controller_epoch != epoch or run.controller_instance != instance:
        raise StaleEpochError(
            f"run {run_id} is controlled by {run.controller_instance} at epoch "
            f"{run.controller_epoch}; this write names {instance} at epoch {epoch}",
            details={"current_epoch": run.controller_epoch, "write_epoch": epoch},
        )
    return run
