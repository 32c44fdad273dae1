"""The tool journal: admit a semantic input before dispatch, settle it with its result before returning."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.models import Run, ToolCall, ToolCallStatus


async def admit(
    session: AsyncSession,
    run: Run,
    *,
    call_id: str,
    tool: str,
    arguments: dict[str, Any],
    instance: str,
    epoch: int,
) -> tuple[int, bool]:
    """Journal the call (or find it, when a replay brings it again): its journal id, and True when new.

    The row records its admission: the controller instance and epoch that
    accepted it. The unique (run, call_id) makes a replayed call the same input.
    """
    table = ToolCall.__table__
    inserted = (
        await session.execute(
            insert(table)
            .values(
                company_id=run.company_id,
                run_id=run.id,
                call_id=call_id,
                tool=tool,
                arguments=arguments,
                status=ToolCallStatus.PENDING,
                admitted_by=instance,
                admitted_epoch=epoch,
            )
            .on_conflict_do_nothing(index_elements=[table.c.run_id, table.c.call_id])
            .returning(table.c.id)
        )
    ).scalar_one_or_none()
    if inserted is not None:
        return inserted, True
    existing = (
        await session.execute(
            select(table.c.id).where(table.c.run_id == run.id, table.c.call_id == call_id)
        )
    ).scalar_one()
    return existing, False


def settle(
    call: ToolCall, *, result: dict[str, Any], is_error: bool, instance: str, epoch: int
) -> None:
    """Save the result; it is what the model gets for this call from now on."""
    call.status = ToolCallStatus.SETTLED
    call.result = result
    call.is_error = is_error
    call.settled_by = instance
    call.settled_epoch = epoch
    call.settled_at = datetime.now(UTC)


async def pending_calls(session: AsyncSession, run: Run) -> list[ToolCall]:
    rows = await session.execute(
        select(ToolCall)
        .where(ToolCall.run_id == run.id, ToolCall.status == ToolCallStatus.PENDING)
        .order_by(ToolCall.id)
    )
    return list(rows.scalars())
