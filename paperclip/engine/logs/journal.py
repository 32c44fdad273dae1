"""The tool journal: admit a semantic input before dispatch, settle it with its result before returning.

Each is one SQL statement per batch of calls, sent straight to asyncpg. A
self-contained call (its outcome follows from its arguments alone) passes
here once: one statement admits, applies and settles it (``record_many``),
and its reply goes out from there.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from paperclip.db.driver import jsonb, jsonb_of_json
from paperclip.engine.logs import events, outbox
from paperclip.models import ToolCall
from paperclip.wire.messages import ToolResult


@dataclass(frozen=True, slots=True)
class CallInput:
    """A journaled call as its executor sees it."""

    id: int
    """The journal row's id: unique, so it also keys the call's effects (its progress event)."""
    run_id: uuid.UUID
    call_id: str
    tool: str
    arguments: dict[str, Any]

    @classmethod
    def of(cls, row: ToolCall) -> CallInput:
        return cls(row.id, row.run_id, row.call_id, row.tool, row.arguments)

    @property
    def command_id(self) -> str:
        """The call's command id, scoped to its run: what its receipt is keyed by.

        The model's own ``command_id`` when it gave one (so a retry of the same
        action is the same command), else the call's id (stable across replays).
        """
        chosen = self.arguments.get("command_id")
        return f"{self.run_id}:cmd:{chosen}" if chosen else f"{self.run_id}:{self.call_id}"


@dataclass(frozen=True, slots=True)
class Request:
    """A tool call the runner sent, to be admitted for ``run_id`` at ``epoch``."""

    run_id: uuid.UUID
    epoch: int
    call_id: str
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Receipt:
    """A write tool's receipt: durable proof its effect happened.

    Under a command id the model named, a ``tool_receipts`` row (a later call
    may repeat the command); under the call's own command id, the call's
    journal row itself (its ``state_revision``), written by the settlement.
    """

    command_id: str
    company_id: uuid.UUID
    run_id: uuid.UUID
    tool: str
    state_revision: str
    result: dict[str, Any]
    named: bool = True
    """The model named the command (``arguments.command_id``): kept in ``tool_receipts``."""

    def body(self, outcome: str) -> dict[str, Any]:
        return {
            "command_id": self.command_id,
            "outcome": outcome,
            "state_revision": self.state_revision,
        }


@dataclass(frozen=True, slots=True)
class Settlement:
    call_id: int
    """The journal row's id."""
    result: dict[str, Any]
    is_error: bool
    epoch: int
    receipt: Receipt | None = None
    """Recorded with the result: the call applied a write."""


# Each table is reached through ``= ANY`` on an indexed column as well as the
# join, so the plan stays an index lookup whatever the tables' sizes and stats.
#
# The runs are locked (in id order: one lock order, no deadlocks) and fenced in
# the same statement that inserts: a run adopted by another controller since
# this one took it matches no row, so none of its calls is admitted. The last
# part returns the calls a replay brought again (the snapshot predates the insert).
#
# FENCED is that first part, shared by both statements: $1 the runs' ids, $2 the
# epochs the caller holds, $3 its instance; ``open``: no budget of the run stopped it.
FENCED = """
WITH fenced AS (
    SELECT r.id, r.company_id, r.budget_stop_at IS NULL AS open
    FROM runs r JOIN unnest($1::uuid[], $2::bigint[]) AS o(id, epoch)
        ON r.id = o.id AND r.controller_epoch = o.epoch
    WHERE r.id = ANY($1::uuid[]) AND r.controller_instance = $3
    ORDER BY r.id
    FOR NO KEY UPDATE OF r  -- the fence's lock (ownership.fence.RUN_LOCK)
)"""

ADMIT_MANY = (
    FENCED
    + """, input AS (
    SELECT * FROM unnest($4::uuid[], $5::text[], $6::text[], $7::jsonb[], $8::bigint[])
        WITH ORDINALITY AS i(run_id, call_id, tool, arguments, epoch, ord)
), inserted AS (
    INSERT INTO tool_calls
        (company_id, run_id, call_id, tool, arguments, status, admitted_by, admitted_epoch, is_error)
    SELECT f.company_id, i.run_id, i.call_id, i.tool, i.arguments, 'pending', $3, i.epoch, false
    FROM input i JOIN fenced f ON f.id = i.run_id
    ORDER BY i.ord
    ON CONFLICT (run_id, call_id) DO NOTHING
    RETURNING id, run_id, call_id
)
SELECT id, run_id, call_id, true AS fresh FROM inserted
UNION ALL
SELECT t.id, t.run_id, t.call_id, false
FROM tool_calls t JOIN input i ON t.run_id = i.run_id AND t.call_id = i.call_id
WHERE t.run_id = ANY($1::uuid[]) AND t.call_id = ANY($5::text[])
    AND t.run_id IN (SELECT id FROM fenced)
"""
)

# The end of a dispatch transaction, in one statement: the log entries of the
# calls' effects (``events.append_cte``), the new receipts, the results, and
# the replies to the runner in its outbox (``outbox.append_cte``).
# Data-modifying CTEs all run, referenced or not.
SETTLE_MANY = (
    "WITH "
    + events.append_cte(
        run_ids="$16", sources="$17", source_seqs="$18", types="$19", payloads="$20", turns="$21"
    )
    + """,
receipts AS (
    INSERT INTO tool_receipts (command_id, company_id, run_id, tool, state_revision, result)
    SELECT * FROM unnest($6::text[], $7::uuid[], $8::uuid[], $9::text[], $10::text[], $11::jsonb[])
), settled AS (
    UPDATE tool_calls t
    SET status = 'settled', result = s.result, is_error = s.is_error,
        settled_by = $1, settled_epoch = s.epoch, settled_at = now(), state_revision = s.revision
    FROM unnest($2::bigint[], $3::jsonb[], $4::boolean[], $5::bigint[], $22::text[])
        AS s(id, result, is_error, epoch, revision)
    WHERE t.id = s.id AND t.id = ANY($2::bigint[]) AND t.status = 'pending'
    RETURNING t.id
), """
    + outbox.append_cte(runner="$12", types="$13", run_ids="$14", payloads="$15")
    + """
SELECT (SELECT count(*) FROM settled) AS settled,
    ARRAY(SELECT seq FROM outbox_appended ORDER BY seq) AS seqs
"""
)


# A self-contained call (its outcome follows from its arguments alone) in one
# statement that commits on its own: its runs locked and fenced, the call
# inserted already settled (its admission, its result and, under its own
# command id, its receipt: one row), its log entry (keyed by the new row's id),
# and, for a runner that takes only sequenced results, its reply in the
# runner's outbox. A call that is not inserted (a replay, a run past the fence
# or over its budget) is not returned: the two-step path answers it.
RECORDED = (
    FENCED
    + """, input AS (
    SELECT * FROM unnest(
        $4::uuid[], $5::text[], $6::text[], $7::jsonb[], $8::bigint[], $9::jsonb[], $10::text[],
        $11::text[], $12::jsonb[]
    ) WITH ORDINALITY AS i(run_id, call_id, tool, arguments, epoch, result, revision,
        event_type, event_payload, ord)
), recorded AS (
    INSERT INTO tool_calls
        (company_id, run_id, call_id, tool, arguments, status, admitted_by, admitted_epoch,
         result, is_error, settled_by, settled_epoch, settled_at, state_revision)
    SELECT f.company_id, i.run_id, i.call_id, i.tool, i.arguments, 'settled', $3, i.epoch,
        i.result, false, $3, i.epoch, now(), i.revision
    FROM input i JOIN fenced f ON f.id = i.run_id AND f.open
    ORDER BY i.ord
    ON CONFLICT (run_id, call_id) DO NOTHING
    RETURNING id, run_id, call_id
), done AS (
    SELECT d.id, i.* FROM recorded d JOIN input i ON i.run_id = d.run_id AND i.call_id = d.call_id
), events_counts AS (
    SELECT run_id, count(*) AS n FROM done WHERE event_type IS NOT NULL GROUP BY run_id
), events_counter AS (
    UPDATE runs r SET last_event_seq = r.last_event_seq + c.n
    FROM events_counts c WHERE r.id = c.run_id AND r.id = ANY($1::uuid[])
    RETURNING r.id, r.company_id, r.turn, r.last_event_seq - c.n AS base
), events_appended AS (
    INSERT INTO run_events
        (company_id, run_id, seq, type, payload, turn, source_instance, source_seq)
    SELECT c.company_id, d.run_id, c.base + row_number() OVER (PARTITION BY d.run_id ORDER BY d.ord),
        d.event_type, d.event_payload, greatest(c.turn, 1), 'tool', d.id
    FROM done d JOIN events_counter c ON c.id = d.run_id
    WHERE d.event_type IS NOT NULL
)"""
)

# The replies go out unsequenced (wire.FEATURE_UNSEQUENCED_RESULTS): the saved
# result is the reply, sent again from the journal if the runner misses it.
# No outbox row and no update of the runner's counter: about a sixth less of
# PostgreSQL's work per call (docs/performance.md, "Replies outside the outbox").
RECORD_MANY = (
    RECORDED
    + """
SELECT d.run_id, d.call_id, 0 AS seq FROM done d ORDER BY d.ord
"""
)

# The replies in the runner's outbox, for a runner that takes sequenced results only.
RECORD_MANY_SEQUENCED = (
    RECORDED
    + """, outbox_counter AS (
    UPDATE runners SET out_seq = out_seq + (SELECT count(*) FROM recorded)
    WHERE id = $13::uuid AND EXISTS (SELECT FROM recorded)
    RETURNING out_seq - (SELECT count(*) FROM recorded) AS base
), outbox_appended AS (
    INSERT INTO runner_outbox (runner_id, seq, type, run_id, payload)
    SELECT $13::uuid, o.base + row_number() OVER (ORDER BY d.ord), 'tool_result', d.run_id,
        jsonb_build_object('call_id', d.call_id, 'content', d.result, 'is_error', false)
    FROM outbox_counter o, done d
    RETURNING seq, run_id, payload->>'call_id' AS call_id
)
SELECT o.run_id, o.call_id, o.seq FROM outbox_appended o ORDER BY o.seq
"""
)


@dataclass(frozen=True, slots=True)
class Recording:
    """A self-contained call, its outcome known before it is journaled."""

    request: Request
    result: dict[str, Any]
    """What the model gets (its receipt included)."""
    state_revision: str
    event: tuple[str, dict[str, Any]] | None
    """Its log entry (type, payload), keyed by the call's journal id once it has one."""


async def record_many(
    connection: asyncpg.Connection,
    recordings: Sequence[Recording],
    *,
    instance: str,
    runner_id: uuid.UUID | None,
) -> dict[tuple[uuid.UUID, str], int]:
    """Admit, apply and settle self-contained calls in one statement that commits on its own.

    Returns, per (run id, call id) recorded, its reply's outbox seq: with
    ``runner_id``, the replies are queued in that runner's outbox; without it,
    none is, and each seq is 0 (the caller sends them unsequenced). A call
    missing from it was not written: the caller takes it the two-step way.
    """
    if not recordings:
        return {}
    epochs = {r.request.run_id: r.request.epoch for r in recordings}
    outbox_of = () if runner_id is None else (runner_id,)
    rows = await connection.fetch(
        RECORD_MANY if runner_id is None else RECORD_MANY_SEQUENCED,
        list(epochs),
        list(epochs.values()),
        instance,
        [r.request.run_id for r in recordings],
        [r.request.call_id for r in recordings],
        [r.request.tool for r in recordings],
        # A call's arguments came in a frame, its result and its log entry are made of them.
        [jsonb_of_json(r.request.arguments) for r in recordings],
        [r.request.epoch for r in recordings],
        [jsonb_of_json(r.result) for r in recordings],
        [r.state_revision for r in recordings],
        [r.event[0] if r.event else None for r in recordings],
        [jsonb_of_json(r.event[1]) if r.event else None for r in recordings],
        *outbox_of,
    )
    return {(row["run_id"], row["call_id"]): row["seq"] for row in rows}


class AlreadySettledError(Exception):
    """A call was settled by another transaction meanwhile: this one must roll back its effects."""


async def admit_many(
    connection: asyncpg.Connection, requests: Sequence[Request], *, instance: str
) -> dict[tuple[uuid.UUID, str], tuple[int, bool]]:
    """Journal the calls in one statement that commits on its own.

    Returns, per (run id, call id), the journal id and whether the row is new
    (False: a replay of a call admitted before). A call that is missing was
    not admitted: its run is no longer this controller's at that epoch.
    """
    if not requests:
        return {}
    epochs = {r.run_id: r.epoch for r in requests}
    rows = await connection.fetch(
        ADMIT_MANY,
        list(epochs),
        list(epochs.values()),
        instance,
        [r.run_id for r in requests],
        [r.call_id for r in requests],
        [r.tool for r in requests],
        [jsonb(r.arguments) for r in requests],
        [r.epoch for r in requests],
    )
    return {(row["run_id"], row["call_id"]): (row["id"], row["fresh"]) for row in rows}


async def settle_many(
    connection: asyncpg.Connection,
    settlements: Sequence[Settlement],
    replies: Sequence[ToolResult],
    *,
    instance: str,
    runner_id: uuid.UUID,
    effects: Sequence[events.Entry] = (),
) -> tuple[list[int], dict[uuid.UUID, int]]:
    """Save results with their receipts and the log entries of their effects
    (``effects``), and queue ``replies`` in the runner's outbox.

    In the caller's transaction, in one statement, the effects' runs locked;
    returns the replies' outbox seqs, in order, and how many log entries each
    run got. The entries are appended as new: the calls are pending, so none
    of their effects was committed. Raises ``AlreadySettledError`` when a call
    was settled meanwhile, so the caller rolls back instead of committing an
    effect twice.
    """
    # A receipt under the call's own command id is the call's row: no receipt row.
    receipts = [s.receipt for s in settlements if s.receipt is not None and s.receipt.named]
    outgoing = [outbox.Outgoing.of(reply) for reply in replies]
    entries = events.first_copies(effects)
    row = await connection.fetchrow(
        SETTLE_MANY,
        instance,
        [s.call_id for s in settlements],
        [jsonb(s.result) for s in settlements],
        [s.is_error for s in settlements],
        [s.epoch for s in settlements],
        [r.command_id for r in receipts],
        [r.company_id for r in receipts],
        [r.run_id for r in receipts],
        [r.tool for r in receipts],
        [r.state_revision for r in receipts],
        [jsonb(r.result) for r in receipts],
        runner_id,
        [m.type for m in outgoing],
        [m.run_id for m in outgoing],
        [jsonb(m.payload) for m in outgoing],
        *events.columns(entries),
        [
            s.receipt.state_revision if s.receipt is not None and not s.receipt.named else None
            for s in settlements
        ],
    )
    assert row is not None
    if row["settled"] != len({s.call_id for s in settlements}):
        raise AlreadySettledError("a tool call was settled by another transaction")
    return list(row["seqs"]), events.counts(entries)
