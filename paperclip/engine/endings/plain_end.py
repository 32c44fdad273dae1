"""A turn's plain end: the run locked with what decides its end, and its status decision in one statement.

Most turns end plainly: the provider's turn failed, or it completed and the
run's report passed the terminal guard; no tool call is unsettled, the run is
no chat turn, holds no budget reservation, and no hold is set. Such an end
is two plain statements in the turn end's transaction: ``LOCK`` (the run's
row under the fence, and whether its end is plain) and ``FINISH`` (the turn
closed, the run's status decision, its tokens revoked, its issue settled,
the activity entry, the ``run.finished`` event, the ``close`` in its runner's
outbox). Every other end (a lost turn, a drain to report, a report nudge, a
chat turn's decision, a hold) is the ORM's, in the same transaction, as
before: ``turn_end``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection

from paperclip import log_context
from paperclip.common.actor import SYSTEM
from paperclip.db.driver import jsonb
from paperclip.engine.logs.outbox import append_cte
from paperclip.engine.ownership.fence import check_fence
from paperclip.errors import NotFoundError
from paperclip.models import ToolCallStatus, TurnStatus
from paperclip.wire.messages import Close, payload_of

LOCK = f"""
SELECT r.id, r.status, r.phase, r.turn, r.result, r.budget_stop_at, r.company_id,
    r.agent_id, r.issue_id, r.controller_instance, r.controller_epoch,
    EXISTS (
        SELECT FROM tool_calls c
        WHERE c.run_id = r.id AND c.status = '{ToolCallStatus.PENDING}'
    ) AS pending,
    EXISTS (
        SELECT FROM conversation_turns t
        WHERE t.wake_request_id = r.wake_request_id AND t.company_id = r.company_id
    ) AS chat,
    EXISTS (SELECT FROM run_reservations v WHERE v.run_id = r.id) AS reserved,
    EXISTS (SELECT FROM issues i WHERE i.id = r.issue_id AND i.parent_id IS NOT NULL) AS part
FROM runs r WHERE r.id = $1
FOR NO KEY UPDATE OF r
"""

FINISH = (
    f"""
WITH turn_ended AS (
    UPDATE run_turns SET status = $6, error_code = $7, error_message = $8, finished_at = $9,
        provider_turn_id = coalesce($10, provider_turn_id),
        session_ref = coalesce($11, session_ref)
    WHERE run_id = $1 AND number = $5
      AND status IN ('{TurnStatus.STARTING}', '{TurnStatus.RUNNING}')
), known AS (
    SELECT EXISTS (
        SELECT FROM run_events
        WHERE run_id = $1 AND source_instance = $17 AND source_seq = $18
    ) AS logged
), finished AS (
    UPDATE runs SET status = $2, phase = 'finished', error_code = $3, error_message = $4,
        status_reason = $12, finished_at = $9, answer = coalesce($13, answer),
        session_ref = coalesce($11, session_ref),
        last_event_seq = last_event_seq + CASE WHEN (SELECT logged FROM known) THEN 0 ELSE 1 END,
        updated_at = now()
    WHERE id = $1
    RETURNING company_id, issue_id, turn, last_event_seq
), logged AS (
    INSERT INTO run_events
        (company_id, run_id, seq, type, payload, turn, source_instance, source_seq)
    SELECT company_id, $1, last_event_seq, 'run.finished', $19::jsonb, greatest(turn, 1),
        $17, $18
    FROM finished WHERE NOT (SELECT logged FROM known)
), revoked AS (
    UPDATE run_tokens SET revoked_at = $9 WHERE run_id = $1 AND revoked_at IS NULL
), settled AS (
    UPDATE issues SET status = $14::text, updated_at = now()
    WHERE id = (SELECT issue_id FROM finished) AND $14::text IS NOT NULL
      AND ($15::text IS NULL OR status = $15::text) AND status IS DISTINCT FROM $14::text
), activity AS (
    INSERT INTO activity_log
        (company_id, actor_type, actor_id, action, entity_type, entity_id, details)
    SELECT company_id, $20, $21, $22, 'run', $1::text, $23::jsonb FROM finished
), """
    + append_cte(runner="$16", types="$24", run_ids="$25", payloads="$26")
    + "\nSELECT count(*) FROM outbox_appended"
)


@dataclass(frozen=True, slots=True)
class EndingRun:
    """A run as a turn's end reads it, locked under the fence (what ``decide`` and the
    terminal guard read of a run, and what makes its end plain)."""

    id: uuid.UUID
    status: str
    phase: str
    turn: int
    result: dict[str, Any] | None
    budget_stop_at: datetime | None
    company_id: uuid.UUID
    agent_id: uuid.UUID
    issue_id: uuid.UUID | None
    controller_instance: str | None
    controller_epoch: int
    pending: bool
    """An admitted tool call has no saved result: its end reports the drain."""
    chat: bool
    """It is a conversation turn: its status decision is the chat's."""
    reserved: bool
    """It holds budget reservations: its end gives them back."""
    part: bool
    """Its issue is a part of another: its end wakes the parent's assignee."""


async def lock_ending(
    connection: AsyncConnection, run_id: uuid.UUID, *, instance: str, epoch: int
) -> EndingRun:
    """Lock the run's row (``FOR NO KEY UPDATE``, as ``lock_run``) and check the fence.

    Sent through SQLAlchemy's connection: it begins the transaction that the
    plain statements and, when the end is not plain, a session then join.
    """
    row = (await connection.exec_driver_sql(LOCK, (run_id,))).first()
    if row is None:
        raise NotFoundError.of("run", run_id)
    run = EndingRun(*row)
    log_context.remember(run.id, issue_id=run.issue_id, company_id=run.company_id)
    check_fence(run, instance=instance, epoch=epoch)
    return run


@dataclass(frozen=True, slots=True)
class StatusDecision:
    """A plain end's decision: the run's terminal status and why, its turn's end, its issue."""

    status: str
    error_code: str | None
    error_message: str | None
    status_reason: str
    turn: int
    turn_status: str
    turn_error_code: str | None
    turn_error_message: str | None
    provider_turn_id: str | None
    session_ref: str | None
    answer: str | None
    issue_status: str | None
    """The issue's status after the run (None: it stays as it is)."""
    issue_status_from: str | None
    """Only an issue in this status moves (None: whatever its status)."""
    details: dict[str, Any]
    """The activity entry's."""


async def finish_plainly(
    driver: asyncpg.Connection,
    run: EndingRun,
    decision: StatusDecision,
    *,
    now: datetime,
    runner_id: uuid.UUID,
    source_instance: str,
    source_seq: int,
) -> None:
    """Commit ``decision`` for the locked ``run`` (one statement, in the caller's transaction),
    its ``run.finished`` event logged as (``source_instance``, ``source_seq``), and queue the
    ``close`` of its session for ``runner_id``."""
    d = decision
    close = Close(seq=0, run_id=run.id)
    await driver.execute(
        FINISH,
        run.id,
        d.status,
        d.error_code,
        d.error_message,
        d.turn,
        d.turn_status,
        d.turn_error_code,
        d.turn_error_message,
        now,
        d.provider_turn_id,
        d.session_ref,
        d.status_reason,
        d.answer,
        d.issue_status,
        d.issue_status_from,
        runner_id,
        source_instance,
        source_seq,
        jsonb({"status": d.status, "error_code": d.error_code}),
        SYSTEM.type,
        SYSTEM.id,
        f"run.{d.status}",
        jsonb(d.details),
        [close.__struct_config__.tag],
        [run.id],
        [jsonb(payload_of(close))],
    )
