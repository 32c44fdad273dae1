"""The control plane's outbox to each runner, in PostgreSQL so any replica can replay it."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.models import Runner, RunnerMessage


async def enqueue(
    session: AsyncSession,
    runner_id: uuid.UUID,
    type_: str,
    payload: dict[str, Any],
    *,
    run_id: uuid.UUID | None = None,
) -> int:
    """Add a message in the caller's transaction; its seq.

    The counter row stays locked until commit, so messages commit in seq
    order and a reader never sees seq n+1 before n.
    """
    seq = (
        await session.execute(
            update(Runner)
            .where(Runner.id == runner_id)
            .values(out_seq=Runner.out_seq + 1)
            .returning(Runner.out_seq)
        )
    ).scalar_one()
    # Core, not the unit of work: this runs for every tool result.
    await session.execute(
        insert(RunnerMessage.__table__).values(
            runner_id=runner_id, seq=seq, type=type_, run_id=run_id, payload=payload
        )
    )
    return seq


async def unsent(
    session: AsyncSession, runner_id: uuid.UUID, after: int, limit: int = 500
) -> list[RunnerMessage]:
    rows = await session.execute(
        select(RunnerMessage)
        .where(RunnerMessage.runner_id == runner_id, RunnerMessage.seq > after)
        .order_by(RunnerMessage.seq)
        .limit(limit)
    )
    return list(rows.scalars())


async def acknowledge(session: AsyncSession, runner_id: uuid.UUID, upto: int) -> None:
    """The runner processed every message up to ``upto``: forget them."""
    await session.execute(
        delete(RunnerMessage).where(RunnerMessage.runner_id == runner_id, RunnerMessage.seq <= upto)
    )
    await session.execute(
        update(Runner).where(Runner.id == runner_id, Runner.acked_seq < upto).values(acked_seq=upto)
    )


def as_wire(message: RunnerMessage) -> dict[str, Any]:
    body = {"type": message.type, "seq": message.seq, **message.payload}
    if message.run_id is not None:
        body["run_id"] = str(message.run_id)
    return body
