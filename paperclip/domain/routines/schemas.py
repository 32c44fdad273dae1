"""Request and response bodies of the routine routes."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from paperclip.domain.issues.schemas import IssuePriorityName
from paperclip.http.fields import NOT_BLANK, IdempotencyKey, JsonObject, LongText, Name
from paperclip.models import Routine, RoutineExecution

Cron = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=200,
        description="Five cron fields (minute hour day-of-month month day-of-week), read in "
        "the routine's time zone: '0 9 * * 1-5' is 09:00 on weekdays.",
    ),
]
TimeZone = Annotated[
    str,
    Meta(min_length=1, max_length=64, description="An IANA time zone: 'UTC', 'Europe/Paris'."),
]
Template = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=500,
        pattern=NOT_BLANK,
        description="The issue's title; placeholders {{date}}, {{time}}, {{datetime}}, "
        "{{weekday}}, {{routine}}, {{trigger}}.",
    ),
]
ConcurrencyName = Literal["skip_if_open", "queue", "allow"]
CatchUpName = Literal["skip_missed", "run_latest_once", "run_all"]
CatchUpCap = Annotated[int, Meta(ge=1, le=1000)]


class RoutineCreate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    agent_id: uuid.UUID
    """The assignee of every issue it makes."""
    title: Template
    description: LongText = ""
    priority: IssuePriorityName = "medium"
    project_id: uuid.UUID | None = None
    """The issues' project; none: the agent's default project (if any)."""
    enabled: bool = True
    cron: Cron | None = None
    """None: no schedule (webhook and calls only)."""
    timezone: TimeZone = "UTC"
    concurrency: ConcurrencyName = "skip_if_open"
    catch_up: CatchUpName = "skip_missed"
    catch_up_cap: CatchUpCap = 10
    webhook: bool = False
    """Give it a webhook: its secret is in this answer only (``webhook_secret``)."""


class RoutineUpdate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name | UnsetType = UNSET
    agent_id: uuid.UUID | UnsetType = UNSET
    title: Template | UnsetType = UNSET
    description: LongText | UnsetType = UNSET
    priority: IssuePriorityName | UnsetType = UNSET
    project_id: uuid.UUID | UnsetType | None = UNSET
    enabled: bool | UnsetType = UNSET
    cron: Cron | UnsetType | None = UNSET
    timezone: TimeZone | UnsetType = UNSET
    concurrency: ConcurrencyName | UnsetType = UNSET
    catch_up: CatchUpName | UnsetType = UNSET
    catch_up_cap: CatchUpCap | UnsetType = UNSET
    webhook: bool | UnsetType = UNSET
    """True: give it a webhook (the secret is in this answer, once); false: remove it."""


class RoutineRun(msgspec.Struct, forbid_unknown_fields=True):
    idempotency_key: IdempotencyKey | None = None
    """The same key again answers the first call's execution, and runs nothing."""
    payload: JsonObject = msgspec.field(default_factory=dict)
    """Shown to the agent under the issue's description."""


class RoutineOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    name: str
    agent_id: uuid.UUID
    title: str
    description: str
    priority: IssuePriorityName
    project_id: uuid.UUID | None
    enabled: bool
    cron: str | None
    timezone: str
    concurrency: ConcurrencyName
    catch_up: CatchUpName
    catch_up_cap: int
    next_slot_at: datetime | None
    """The first cron slot not decided yet (null: set at the scheduler's next pass)."""
    missed_slots: int
    """Late cron slots its catch-up policy did not run, in all."""
    webhook: bool
    webhook_path: str | None
    """POST here, with the body signed: ``X-Paperclip-Signature: sha256=<hex>``."""
    next_runs: list[datetime]
    """Its next cron slots (none while disabled)."""
    created_at: datetime
    updated_at: datetime
    webhook_secret: str | None = None
    """The webhook's secret: in the answer that made it only (creation, turning the webhook
    on, rotation)."""

    @classmethod
    def of(cls, row: Routine, next_runs: list[datetime], secret: str | None = None) -> RoutineOut:
        has_webhook = row.webhook_nonce is not None
        path = f"/api/companies/{row.company_id}/routines/{row.id}/webhook"
        return cls(
            id=row.id,
            company_id=row.company_id,
            name=row.name,
            agent_id=row.agent_id,
            title=row.title,
            description=row.description,
            priority=row.priority,  # type: ignore[arg-type]
            project_id=row.project_id,
            enabled=row.enabled,
            cron=row.cron,
            timezone=row.timezone,
            concurrency=row.concurrency,  # type: ignore[arg-type]
            catch_up=row.catch_up,  # type: ignore[arg-type]
            catch_up_cap=row.catch_up_cap,
            next_slot_at=row.next_slot_at,
            missed_slots=row.missed_slots,
            webhook=has_webhook,
            webhook_path=path if has_webhook else None,
            next_runs=next_runs,
            created_at=row.created_at,
            updated_at=row.updated_at,
            webhook_secret=secret,
        )


class ExecutionOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    routine_id: uuid.UUID
    slot_key: str
    slot_at: datetime
    trigger: Literal["cron", "webhook", "manual"]
    status: Literal["started", "queued", "skipped"]
    reason: str | None
    """Why it was skipped or is queued: ``open_execution``, or the check that refused it."""
    issue_id: uuid.UUID | None
    wake_request_id: uuid.UUID | None
    started_at: datetime | None
    created_at: datetime
    payload: JsonObject
    deduplicated: bool = False
    """True: the slot was decided before (the same key); nothing changed."""

    @classmethod
    def of(cls, row: RoutineExecution, *, deduplicated: bool = False) -> ExecutionOut:
        out = msgspec.convert(row, cls, from_attributes=True)
        return msgspec.structs.replace(out, deduplicated=deduplicated)
