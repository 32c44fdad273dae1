"""The epoch fence: a controller's writes for a run are refused once another controller adopted it."""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

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
    error = _fence_error(run, instance, epoch)
    if error is not None:
        raise error
    return run


# Built once: this runs for every batch of tool calls.
LOCK_RUNS = (
    select(Run)
    .where(Run.id.in_(bindparam("ids", expanding=True)))
    .order_by(Run.id)
    # The execution input is the whole prompt: loaded only by the tool that reads it.
    .options(defer(Run.execution_input))
    .with_for_update()
    .execution_options(populate_existing=True)
)


async def lock_runs(
    session: AsyncSession, epochs: dict[uuid.UUID, int], *, instance: str
) -> tuple[dict[uuid.UUID, Run], dict[uuid.UUID, StaleEpochError]]:
    """``lock_run`` for several runs in one statement (locked in id order: no deadlocks).

    Returns the runs that passed the fence, and a refusal for each that did not.
    """
    rows = (await session.execute(LOCK_RUNS, {"ids": list(epochs)})).scalars()
    locked: dict[uuid.UUID, Run] = {}
    refused: dict[uuid.UUID, StaleEpochError] = {}
    for run in rows:
        error = _fence_error(run, instance, epochs[run.id])
        if error is None:
            locked[run.id] = run
        else:
            refused[run.id] = error
    for run_id in epochs.keys() - locked.keys() - refused.keys():
        refused[run_id] = StaleEpochError(f"run {run_id} no longer exists")
    return locked, refused


def _fence_error(run: Run, instance: str, epoch: int) -> StaleEpochError | None:
    if run.controller_epoch == epoch and run.controller_instance == instance:
        return None
    return StaleEpochError(
        f"run {run.id} is controlled by {run.controller_instance} at epoch "
        f"{run.controller_epoch}; this write names {instance} at epoch {epoch}",
        details={"current_epoch": run.controller_epoch, "write_epoch": epoch},
    )
