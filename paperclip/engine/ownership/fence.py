"""The epoch fence: a controller's writes for a run are refused once another controller adopted it."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.orm import defer

from paperclip import log_context
from paperclip.errors import ConflictError, NotFoundError
from paperclip.models import Run

RUN_LOCK = {"key_share": True}
"""How a controller write locks its run: ``FOR NO KEY UPDATE``.

It orders the run's writers and meets a takeover's epoch update, yet leaves
the run's key free: a row that refers to the run (an outbox entry, an event)
takes a ``KEY SHARE`` lock on it through its foreign key, and with ``FOR
UPDATE`` a transaction that wrote such a row first and locked the run second
(``answer_again``: the runner's outbox counter, then the run) met a fenced
write that holds the run and wants the counter, and PostgreSQL ended one."""


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
            .with_for_update(**RUN_LOCK)
            .execution_options(populate_existing=True)
        )
    ).scalar_one_or_none()
    if run is None:
        raise NotFoundError.of("run", run_id)
    log_context.remember(run.id, issue_id=run.issue_id, company_id=run.company_id)
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
    .with_for_update(**RUN_LOCK)
    .execution_options(populate_existing=True)
)


async def lock_runs(
    session: AsyncSession, epochs: dict[uuid.UUID, int], *, instance: str
) -> tuple[dict[uuid.UUID, Run], dict[uuid.UUID, StaleEpochError]]:
    """``lock_run`` for several runs in one statement (locked in id order: no deadlocks).

    Returns the runs that passed the fence, and a refusal for each that did not.
    """
    rows = (await session.execute(LOCK_RUNS, {"ids": list(epochs)})).scalars()
    return _fenced(rows, epochs, instance)


@dataclass(frozen=True, slots=True)
class LockedRun:
    """A run's row as the plain lock reads it: the fence, and whom the run acts for."""

    id: uuid.UUID
    company_id: uuid.UUID
    agent_id: uuid.UUID
    issue_id: uuid.UUID | None
    controller_instance: str | None
    controller_epoch: int
    budget_stopped: bool = False
    """A budget of the run ran out: its tool calls are refused (``budget_exceeded``)."""


Locked = TypeVar("Locked", Run, LockedRun)

LOCK_FENCED = """
SELECT id, company_id, agent_id, issue_id, controller_instance, controller_epoch,
    budget_stop_at IS NOT NULL
FROM runs WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE
"""


async def lock_fenced(
    connection: AsyncConnection, epochs: dict[uuid.UUID, int], *, instance: str
) -> tuple[dict[uuid.UUID, LockedRun], dict[uuid.UUID, StaleEpochError]]:
    """``lock_runs`` without the ORM: the runs' rows locked (in id order), their fence checked.

    Sent through SQLAlchemy's connection, so it begins the transaction that
    the statements sent straight to asyncpg afterwards join.
    """
    result = await connection.exec_driver_sql(LOCK_FENCED, (list(epochs),))
    return _fenced((LockedRun(*row) for row in result), epochs, instance)


def _fenced(
    rows: Iterable[Locked], epochs: dict[uuid.UUID, int], instance: str
) -> tuple[dict[uuid.UUID, Locked], dict[uuid.UUID, StaleEpochError]]:
    """The locked rows that pass the fence, and a refusal for each run that does not."""
    locked: dict[uuid.UUID, Locked] = {}
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


class Fenced(Protocol):
    id: uuid.UUID
    controller_instance: str | None
    controller_epoch: int


def check_fence(run: Fenced, *, instance: str, epoch: int) -> None:
    """Raise StaleEpochError unless ``instance`` at ``epoch`` controls ``run`` (read under its
    row lock)."""
    error = _fence_error(run, instance, epoch)
    if error is not None:
        raise error


def _fence_error(run: Fenced, instance: str, epoch: int) -> StaleEpochError | None:
    if run.controller_epoch == epoch and run.controller_instance == instance:
        return None
    return StaleEpochError(
        f"run {run.id} is controlled by {run.controller_instance} at epoch "
        f"{run.controller_epoch}; this write names {instance} at epoch {epoch}",
        details={"current_epoch": run.controller_epoch, "write_epoch": epoch},
    )
