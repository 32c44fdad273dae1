"""Appending to a run's event log: gap-free ``seq``, replays dropped by (source_instance, source_seq)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.models import Run, RunEvent


@dataclass(frozen=True, slots=True)
class NewEvent:
    source_seq: int
    type: str
    payload: dict[str, Any]


async def append_events(
    session: AsyncSession, run: Run, source_instance: str, events: Sequence[NewEvent]
) -> int:
    """Append events the log does not hold yet; the run's row must be locked (``lock_run``).

    Under that lock no other writer runs for this run, so filtering the known
    replay keys first keeps ``seq`` gap-free; the unique constraint stays as
    the database's guarantee.
    """
    if not events:
        return 0
    known = set(
        (
            await session.execute(
                select(RunEvent.source_seq).where(
                    RunEvent.run_id == run.id,
                    RunEvent.source_instance == source_instance,
                    RunEvent.source_seq.in_([e.source_seq for e in events]),
                )
            )
        ).scalars()
    )
    fresh = [e for e in events if e.source_seq not in known]
    seen: set[int] = set()
    rows = []
    for event in fresh:
        if event.source_seq in seen:
            continue
        seen.add(event.source_seq)
        run.last_event_seq += 1
        rows.append(
            {
                "company_id": run.company_id,
                "run_id": run.id,
                "seq": run.last_event_seq,
                "type": event.type,
                "payload": event.payload,
                "source_instance": source_instance,
                "source_seq": event.source_seq,
            }
        )
    if rows:
        await session.execute(insert(RunEvent.__table__).values(rows))
    return len(rows)
