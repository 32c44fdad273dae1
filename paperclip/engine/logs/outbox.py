"""The control plane's outbox to each runner, in PostgreSQL so any replica can replay it.

One append, written once (``APPEND``): it takes the seqs from the runner's
counter row, which stays locked until the transaction commits, so messages
commit in seq order and a reader never sees seq n+1 before n. ``enqueue`` runs
it alone; the tool journal's settlement runs it inside its own statement.

A run's way: a ``start_turn`` from ``engine/scheduling/wake_claims.py``; next,
``engine/links/link.py`` sends it to the runner (``paperclip/runner/runtime.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.db.driver import driver_connection, jsonb
from paperclip.models import Runner, RunnerMessage
from paperclip.wire.messages import ToRunnerData, frame_of, payload_of

_APPEND = """
outbox_counter AS (
    UPDATE runners SET out_seq = out_seq + cardinality({types}::text[])
    WHERE id = {runner}::uuid AND cardinality({types}::text[]) > 0
    RETURNING out_seq - cardinality({types}::text[]) AS base
), outbox_appended AS (
    INSERT INTO runner_outbox (runner_id, seq, type, run_id, payload)
    SELECT {runner}::uuid, outbox_counter.base + m.ord, m.type, m.run_id, m.payload
    FROM outbox_counter,
        unnest({types}::text[], {run_ids}::uuid[], {payloads}::jsonb[])
            WITH ORDINALITY AS m(type, run_id, payload, ord)
    RETURNING seq
)"""


def append_cte(*, runner: str, types: str, run_ids: str, payloads: str) -> str:
    """The append as common table expressions, with the statement's own parameter names.

    ``outbox_appended`` returns the new rows' seqs. Data-modifying CTEs all run,
    whether the rest of the statement reads them or not.
    """
    return _APPEND.format(runner=runner, types=types, run_ids=run_ids, payloads=payloads)


_APPEND_EACH = """
outbox_messages AS (
    SELECT m.runner_id, m.type, m.run_id, m.payload,
        row_number() OVER (PARTITION BY m.runner_id ORDER BY m.ord) AS n
    FROM unnest({runners}::uuid[], {types}::text[], {run_ids}::uuid[], {payloads}::jsonb[])
        WITH ORDINALITY AS m(runner_id, type, run_id, payload, ord)
    WHERE {keep}
), outbox_counters AS (
    UPDATE runners SET out_seq = runners.out_seq + c.n
    FROM (SELECT runner_id, count(*) AS n FROM outbox_messages GROUP BY runner_id) AS c
    WHERE runners.id = c.runner_id
    RETURNING runners.id, runners.out_seq - c.n AS base
), outbox_appended AS (
    INSERT INTO runner_outbox (runner_id, seq, type, run_id, payload)
    SELECT m.runner_id, c.base + m.n, m.type, m.run_id, m.payload
    FROM outbox_messages m JOIN outbox_counters c ON c.id = m.runner_id
    RETURNING run_id, seq
)"""


def append_each_cte(*, runners: str, types: str, run_ids: str, payloads: str, keep: str) -> str:
    """The append of messages to several runners' outboxes (``runners``: each message's), as
    common table expressions; only the messages ``keep`` (a condition on ``m.run_id``, ...)
    holds for. Each runner's counter row moves once, by its messages' count, and stays
    locked until the transaction commits, as in ``append_cte``.

    ``outbox_appended`` returns each new row's run and seq.
    """
    return _APPEND_EACH.format(
        runners=runners, types=types, run_ids=run_ids, payloads=payloads, keep=keep
    )


ENQUEUE = (
    "WITH "
    + append_cte(runner="$1", types="$2", run_ids="$3", payloads="$4")
    + "\nSELECT ARRAY(SELECT seq FROM outbox_appended ORDER BY seq) AS seqs"
)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message for the outbox, as its row keeps it."""

    type: str
    run_id: uuid.UUID | None
    """The run the row belongs to (None: the message names a run that may not exist)."""
    payload: dict[str, Any]

    @classmethod
    def of(cls, message: ToRunnerData, *, attach: bool = True) -> Outgoing:
        """A message to queue; ``attach=False`` keeps its run id in the payload only (a
        message about no run, ``release_workspace``, has none)."""
        payload = payload_of(message)
        run_id: uuid.UUID | None = getattr(message, "run_id", None)
        if not attach and run_id is not None:
            payload["run_id"] = str(run_id)
        type_: str = message.__struct_config__.tag  # type: ignore[assignment]
        return cls(type_, run_id if attach else None, payload)


async def enqueue(
    session: AsyncSession, runner_id: uuid.UUID, messages: Sequence[Outgoing]
) -> list[int]:
    """Queue messages for a runner in the caller's transaction; their seqs, in order."""
    if not messages:
        return []
    connection = await driver_connection(session)
    seqs: list[int] = await connection.fetchval(
        ENQUEUE,
        runner_id,
        [m.type for m in messages],
        [m.run_id for m in messages],
        [jsonb(m.payload) for m in messages],
    )
    return seqs


async def enqueue_one(
    session: AsyncSession, runner_id: uuid.UUID, message: ToRunnerData, *, attach: bool = True
) -> int:
    [seq] = await enqueue(session, runner_id, [Outgoing.of(message, attach=attach)])
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


async def has_start_pending(session: AsyncSession, runner_id: uuid.UUID, run_id: uuid.UUID) -> bool:
    """Is the run's ``start_turn`` still in the runner's outbox (the runner will get it)?"""
    found = await session.execute(
        select(RunnerMessage.seq)
        .where(
            RunnerMessage.runner_id == runner_id,
            RunnerMessage.run_id == run_id,
            RunnerMessage.type == "start_turn",
        )
        .limit(1)
    )
    return found.scalar_one_or_none() is not None


async def withdraw_start(session: AsyncSession, run_id: uuid.UUID, turn: int) -> None:
    """Take back turn ``turn``'s ``start_turn`` if no runner acknowledged it yet.

    The turn was given up (lost) and the run goes on in a next turn, which carries
    what this one carried: a runner process that received it from the outbox later
    would start both in one session. A runner takes any later seq: the gap is harmless.
    """
    await session.execute(
        delete(RunnerMessage).where(
            RunnerMessage.run_id == run_id,
            RunnerMessage.type == "start_turn",
            RunnerMessage.payload["turn"].as_integer() == turn,
        )
    )


async def acknowledge(session: AsyncSession, runner_id: uuid.UUID, upto: int) -> None:
    """The runner processed every message up to ``upto``: forget them."""
    await session.execute(
        delete(RunnerMessage).where(RunnerMessage.runner_id == runner_id, RunnerMessage.seq <= upto)
    )
    await session.execute(
        update(Runner).where(Runner.id == runner_id, Runner.acked_seq < upto).values(acked_seq=upto)
    )


def as_frame(message: RunnerMessage) -> str:
    return frame_of(message.type, message.seq, message.run_id, message.payload)
