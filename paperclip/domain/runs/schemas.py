"""The bodies of the runs routes: msgspec structs that Litestar validates and documents."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

import msgspec

from paperclip.domain.runs.live_state import failure_reason
from paperclip.http.fields import IdempotencyKey, JsonObject, ShortText
from paperclip.models import Run, RunEvent, RunTurn, WakeRequest

RunStatusName = Literal["queued", "running", "succeeded", "failed", "cancelled"]


class WakeupCreate(msgspec.Struct, forbid_unknown_fields=True):
    issue_id: uuid.UUID | None = None
    reason: ShortText = ""
    payload: JsonObject = msgspec.field(default_factory=dict)
    idempotency_key: IdempotencyKey | None = None


class WakeRequestOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    agent_id: uuid.UUID
    issue_id: uuid.UUID | None
    source: str
    reason: str
    payload: JsonObject
    idempotency_key: str | None
    coalesced_count: int
    status: str
    claimed_at: datetime | None
    run_id: uuid.UUID | None
    created_at: datetime
    deduplicated: bool = False

    @classmethod
    def of(cls, row: WakeRequest, *, deduplicated: bool = False) -> WakeRequestOut:
        out = msgspec.convert(row, cls, from_attributes=True)
        return msgspec.structs.replace(out, deduplicated=deduplicated) if deduplicated else out


class RunUsageOut(msgspec.Struct):
    """A run's usage, summed over its cost events."""

    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost_micros: int
    """In millionths of the currency: the sum of the events whose cost is known."""
    events: int
    unpriced_events: int


class RunOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    agent_id: uuid.UUID
    issue_id: uuid.UUID | None
    status: RunStatusName
    phase: str
    provider: str
    session_ref: str | None
    execution_input_schema: str | None
    execution_input: JsonObject | None
    result: JsonObject | None
    error_code: str | None
    error_message: str | None
    controller_instance: str | None
    controller_epoch: int
    started_at: datetime | None
    finished_at: datetime | None
    created_at: datetime
    status_reason: str | None
    """The committed status decision (``task_completed``, ``finish_not_called``, ...)."""
    answer: str | None
    """The final prose of the run's turn, as the provider reported it."""
    presentation: JsonObject | None
    """The presentation decision, once recorded: ``presentationDecision`` (``answer`` or
    ``none``), ``reason``, and ``comment_id`` of the comment that presented the answer."""
    turn: int
    """Its current turn's number (a run lost with its runner goes on in a next turn)."""
    resume_attempts: int
    """Turns started again after a loss."""

    budget_stop_at: datetime | None = None
    """When a budget of the run ran out mid-turn: its tool calls are refused since."""
    usage: RunUsageOut | None = None
    """What the run used and cost (on a single run's answer)."""
    reason: str | None = None
    """A failed run's reason as one plain sentence (its code is ``error_code``)."""
    dismissed_at: datetime | None = None
    """When a person dismissed the failed run (it left the inbox)."""

    @classmethod
    def of(cls, row: Run, usage: RunUsageOut | None = None) -> RunOut:
        out = msgspec.convert(row, cls, from_attributes=True)
        reason = (
            failure_reason(row.error_code, row.error_message) if row.status == "failed" else None
        )
        return msgspec.structs.replace(out, usage=usage or out.usage, reason=reason)


class RunEventOut(msgspec.Struct):
    seq: int
    type: str
    payload: JsonObject
    turn: int
    """The run turn the event belongs to: the one whose provider emitted it, as its runner
    says (else the run's turn when the event was stored). A lost turn's events stay under
    it, so two ``turn/completed`` of one run under turns 1 and 2 are two turns' ends."""
    source_instance: str
    source_seq: int
    created_at: datetime

    @classmethod
    def of(cls, row: RunEvent) -> RunEventOut:
        return msgspec.convert(row, cls, from_attributes=True)


TurnKindName = Literal["initial", "continuation", "fresh_retry", "report_nudge"]


TurnStatusName = Literal["starting", "running", "completed", "failed", "lost"]


class RunTurnOut(msgspec.Struct):
    number: int
    """1 for the run's first turn, then 2, 3, ..."""
    kind: TurnKindName
    """``initial``; ``continuation``: the same provider session resumed after a loss;
    ``fresh_retry``: a new session with the full brief; ``report_nudge``: the same session
    asked for the report its last turn ended without."""
    status: TurnStatusName
    runner_id: uuid.UUID | None
    session_ref: str | None
    """The provider session it ran in (a Codex thread id), once known."""
    provider_turn_id: str | None
    input_schema: str | None
    """A continuation's input schema (``paperclip.native-continuation.v1``); the first turn's
    input is the run's ``execution_input``."""
    error_code: str | None
    error_message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, row: RunTurn) -> RunTurnOut:
        return msgspec.convert(row, cls, from_attributes=True)


class RunTurnList(msgspec.Struct):
    items: list[RunTurnOut]


class RunEventPage(msgspec.Struct):
    items: list[RunEventOut]
    next_after_seq: int | None
    """Pass as ``after_seq`` to continue; null when this page reached the end of the log so far."""
