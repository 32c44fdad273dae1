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
_APPEND = """
events_input AS (
    SELECT * FROM unnest(
        {run_ids}::uuid[], {sources}::text[], {source_seqs}::bigint[], {types}::text[],
        {payloads}::jsonb[], {turns}::integer[]
    ) WITH ORDINALITY AS e(run_id, source_instance, source_seq, type, payload, turn, ord)
), events_counts AS (
    SELECT run_id, count(*) AS n FROM events_input GROUP BY run_id
), events_counter AS (
    UPDATE runs r SET last_event_seq = r.last_event_seq + events_counts.n
    FROM events_counts WHERE r.id = events_counts.run_id AND r.id = ANY({run_ids}::uuid[])
    RETURNING r.id, r.company_id, r.turn, r.last_event_seq - events_counts.n AS base
), events_appended AS (
    INSERT INTO run_events
        (company_id, run_id, seq, type, payload, turn, source_instance, source_seq)
    SELECT events_counter.company_id, e.run_id,
        events_counter.base + row_number() OVER (PARTITION BY e.run_id ORDER BY e.ord),
        e.type, e.payload,
        CASE WHEN e.turn > 0 THEN e.turn ELSE greatest(events_counter.turn, 1) END,
        e.source_instance, e.source_seq
    FROM events_input e JOIN events_counter ON events_counter.id = e.run_id
    RETURNING run_id
)"""


def append_cte(
    *, run_ids: str, sources: str, source_seqs: str, types: str, payloads: str, turns: str
) -> str:
    """The append as common table expressions, with the statement's own parameter names
    (the six columns of ``columns``), so another statement can append in the same round trip."""
    return _APPEND.format(
        run_ids=run_ids,
        sources=sources,
        source_seqs=source_seqs,
        types=types,
        payloads=payloads,
        turns=turns,
    )


APPEND = (
    "WITH "
    + append_cte(
        run_ids="$1", sources="$2", source_seqs="$3", types="$4", payloads="$5", turns="$6"
    )
    + "\nSELECT count(*) FROM events_appended"
)

Entry = tuple[uuid.UUID, str, Sequence[NewEvent]]
"""Events for one run's log: (run id, source instance, events)."""


def first_copies(entries: Sequence[Entry]) -> dict[tuple[uuid.UUID, str, int], NewEvent]:
    """The events by replay key, in order; the first copy of a key repeated within stands."""
    fresh: dict[tuple[uuid.UUID, str, int], NewEvent] = {}
    for run_id, source, events in entries:
        for event in events:
            fresh.setdefault((run_id, source, event.source_seq), event)
    return fresh


def columns(fresh: dict[tuple[uuid.UUID, str, int], NewEvent]) -> list[list[Any]]:
    """The append's six parameters (``append_cte``), for events keyed as ``first_copies`` keys them."""
    rows = list(fresh.items())
    return [
        [key[0] for key, _ in rows],
        [key[1] for key, _ in rows],
        [key[2] for key, _ in rows],
        [event.type for _, event in rows],
        [jsonb(event.payload) for _, event in rows],
        [event.turn for _, event in rows],
    ]


def counts(fresh: dict[tuple[uuid.UUID, str, int], NewEvent]) -> dict[uuid.UUID, int]:
    """How many events each run gets."""
    added: dict[uuid.UUID, int] = {}
    for run_id, _, _ in fresh:
        added[run_id] = added.get(run_id, 0) + 1
    return added


async def append_events(
    session: AsyncSession,
    run: Run,
    source_instance: str,
    events: Sequence[NewEvent],
) -> int:
    """Append events to one run's log; see ``append_many``."""
    return await append_many(session, [(run, source_instance, events)])


async def append_many(
    session: AsyncSession,
    entries: Sequence[tuple[Run, str, Sequence[NewEvent]]],
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
    entries: Sequence[Entry],
) -> dict[uuid.UUID, int]:
    """Append events the logs do not hold yet, (run id, source instance, events) each,
    in the connection's transaction; returns how many each run got.

    The runs' rows must be locked: under that lock no other writer runs for
    them, so filtering the known replay keys first keeps ``seq`` gap-free;
    the unique constraint stays as the database's guarantee. (A tool
    call's effects skip that lookup: they are appended by its settlement,
    ``journal.settle_many``, while the call is pending, so none is logged yet.)
    """
    fresh = first_copies(entries)
    if fresh:
        rows = await connection.fetch(KNOWN, *(list(column) for column in zip(*fresh, strict=True)))
        for row in rows:
            fresh.pop((row["run_id"], row["source_instance"], row["source_seq"]), None)
    if not fresh:
        return {}
    await connection.execute(APPEND, *columns(fresh))
    return counts(fresh)
