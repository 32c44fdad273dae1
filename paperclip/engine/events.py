"""Appending to run event logs: gap-free ``seq``, replays dropped by (source_instance, source_seq).

Every provider notification and every progress report passes here, so the
append is plain SQL on the session's asyncpg connection: one statement that
takes the seqs from the runs' counters and inserts the rows, for any number
of runs at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from paperclip.db.driver import driver_connection, jsonb
from paperclip.models import Run


@dataclass(frozen=True, slots=True)
class NewEvent:
    source_seq: int
    type: str
    payload: dict[str, Any]
    turn: int = 0
    """The turn it belongs to, when its source says (0: the run's current turn)."""


KNOWN = """
SELECT e.run_id, e.source_instance, e.source_seq
FROM run_events e
JOIN unnest($1::uuid[], $2::text[], $3::bigint[]) AS k(run_id, source_instance, source_seq)
    ON e.run_id = k.run_id AND e.source_instance = k.source_instance
    AND e.source_seq = k.source_seq
WHERE e.run_id = ANY($1::uuid[]) AND e.source_seq = ANY($3::bigint[])
"""

# Rows are numbered per run in input order, after the run's counter. The
# ``= ANY`` beside each join keeps the plans index lookups at any table size.
APPEND = """
WITH input AS (
    SELECT * FROM unnest(
        $1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::jsonb[], $6::integer[]
    ) WITH ORDINALITY AS e(run_id, source_instance, source_seq, type, payload, turn, ord)
), counts AS (
    SELECT run_id, count(*) AS n FROM input GROUP BY run_id
), counter AS (
    UPDATE runs r SET last_event_seq = r.last_event_seq + counts.n
    FROM counts WHERE r.id = counts.run_id AND r.id = ANY($1::uuid[])
    RETURNING r.id, r.company_id, r.turn, r.last_event_seq - counts.n AS base
)
INSERT INTO run_events
    (company_id, run_id, seq, type, payload, turn, source_instance, source_seq)
SELECT counter.company_id, e.run_id,
    counter.base + row_number() OVER (PARTITION BY e.run_id ORDER BY e.ord),
    e.type, e.payload, CASE WHEN e.turn > 0 THEN e.turn ELSE greatest(counter.turn, 1) END,
    e.source_instance, e.source_seq
FROM input e JOIN counter ON counter.id = e.run_id
"""


async def append_events(
    session: AsyncSession,
    run: Run,
    source_instance: str,
    events: Sequence[NewEvent],
    *,
    may_repeat: bool = True,
) -> int:
    """Append events to one run's log; see ``append_many``."""
    return await append_many(session, [(run, source_instance, events)], may_repeat=may_repeat)


async def append_many(
    session: AsyncSession,
    entries: Sequence[tuple[Run, str, Sequence[NewEvent]]],
    *,
    may_repeat: bool = True,
) -> int:
    """Append events the logs do not hold yet, (run, source instance, events) each.

    The runs' rows must be locked (``lock_run``); see ``append_rows``. The
    session's runs hold their new counters afterwards.
    """
    if not any(events for _, _, events in entries):
        return 0
    # The runs are locked, so the session's transaction has begun: these join it.
    added = await append_rows(
        await driver_connection(session),
        [(run.id, source, events) for run, source, events in entries],
        may_repeat=may_repeat,
    )
    total = sum(added.values())
    # The rows already hold the new counters: the session must neither write
    # them again nor read stale ones.
    for run, _, _ in entries:
        if run.id in added:
            set_committed_value(run, "last_event_seq", run.last_event_seq + added.pop(run.id))
    return total


async def append_rows(
    connection: asyncpg.Connection,
    entries: Sequence[tuple[uuid.UUID, str, Sequence[NewEvent]]],
    *,
    may_repeat: bool = True,
) -> dict[uuid.UUID, int]:
    """Append events the logs do not hold yet, (run id, source instance, events) each,
    in the connection's transaction; returns how many each run got.

    The runs' rows must be locked: under that lock no other writer runs for
    them, so filtering the known replay keys first keeps ``seq`` gap-free;
    the unique constraint stays as the database's guarantee.
    ``may_repeat=False`` skips that lookup when the caller knows the events
    are new (the effects of calls still pending in the journal: effects
    commit with the call's result).
    """
    keyed = [
        ((run_id, source, event.source_seq), event)
        for run_id, source, events in entries
        for event in events
    ]
    if not keyed:
        return {}
    known: set[tuple[uuid.UUID, str, int]] = set()
    if may_repeat:
        rows = await connection.fetch(
            KNOWN, *(list(column) for column in zip(*(key for key, _ in keyed), strict=True))
        )
        known = {(row["run_id"], row["source_instance"], row["source_seq"]) for row in rows}
    fresh: dict[tuple[uuid.UUID, str, int], NewEvent] = {}
    for key, event in keyed:
        if key not in known:
            fresh.setdefault(key, event)  # the first copy of a repeated key stands
    if not fresh:
        return {}
    rows_in_order = list(fresh.items())
    await connection.execute(
        APPEND,
        [key[0] for key, _ in rows_in_order],
        [key[1] for key, _ in rows_in_order],
        [key[2] for key, _ in rows_in_order],
        [event.type for _, event in rows_in_order],
        [jsonb(event.payload) for _, event in rows_in_order],
        [event.turn for _, event in rows_in_order],
    )
    added: dict[uuid.UUID, int] = {}
    for key, _ in rows_in_order:
        added[key[0]] = added.get(key[0], 0) + 1
    return added
