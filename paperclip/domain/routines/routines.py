"""Routines: make, change and delete them; run one now; take a signed webhook; list executions.

A routine's cron slots are fired by the engine's routine scheduler
(``paperclip.engine.scheduling.routines``); a call and a webhook are slots too, keyed by
their idempotency key. Every slot goes through ``execute_slot`` under the
routine's row lock. Changing a routine's schedule (or enabling it) clears
``next_slot_at``: the scheduler starts it again from its own clock, at the
first slot after its next pass, so a schedule never fires for the time it
was off.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.clock import Clock, system_clock
from paperclip.common.activity import record_activity
from paperclip.common.actor import SYSTEM, Actor
from paperclip.common.queries import Cursor, get_scoped, keyset_page
from paperclip.common.server_secrets import server_secret
from paperclip.domain.companies.companies import company_writes, require_company
from paperclip.domain.issues.issue_numbers import IssueNumbers
from paperclip.domain.projects.projects import project_ref
from paperclip.domain.routines.routine_executions import ExecutionOutcome, execute_slot
from paperclip.domain.routines.routine_schedule import Schedule, check_cron, check_timezone
from paperclip.domain.routines.routine_secrets import (
    SERVER_SECRET,
    new_nonce,
    signature_matches,
    webhook_secret,
)
from paperclip.domain.routines.routine_templates import check_template
from paperclip.errors import ConflictError, InvalidInputError, NotFoundError, UnauthorizedError
from paperclip.models import Agent, Routine, RoutineExecution, Trigger

ROUTINE_LOCK = {"key_share": True}
"""``FOR NO KEY UPDATE``: slots of one routine are decided one after the other, while its
executions (whose foreign key takes ``FOR KEY SHARE``) are still written."""
SCHEDULE_FIELDS = ("cron", "timezone", "enabled")
NEXT_RUNS = 5


class RoutineService:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        numbers: IssueNumbers,
        clock: Clock = system_clock,
    ) -> None:
        self.sessions = sessions
        self.numbers = numbers
        self.clock = clock
        """Only for the next runs an answer shows: the scheduler decides from its own."""
        self._installation: bytes | None = None

    async def _secret_of(self, routine: Routine) -> str | None:
        if routine.webhook_nonce is None:
            return None
        if self._installation is None:
            self._installation = await server_secret(self.sessions, SERVER_SECRET)
        return webhook_secret(self._installation, routine.id, routine.webhook_nonce)

    async def create(
        self, actor: Actor, company_id: uuid.UUID, fields: dict[str, Any]
    ) -> tuple[Routine, str | None]:
        """Make a routine; its webhook secret (when it has a webhook) is in the answer, once."""
        webhook = bool(fields.pop("webhook", False))
        _check(fields)
        try:
            async with company_writes(self.sessions, company_id) as session:
                await _check_references(session, company_id, fields)
                routine = Routine(
                    id=uuid.uuid4(),
                    company_id=company_id,
                    webhook_nonce=new_nonce() if webhook else None,
                    missed_slots=0,
                    **fields,
                )
                session.add(routine)
                await session.flush()
                record_activity(
                    session,
                    actor,
                    "routine.created",
                    entity_type="routine",
                    entity_id=routine.id,
                    company_id=company_id,
                    details={"name": routine.name},
                )
        except IntegrityError as exc:
            raise _name_taken(fields.get("name", "")) from exc
        return routine, await self._secret_of(routine)

    async def get(self, company_id: uuid.UUID, routine_id: uuid.UUID) -> Routine:
        async with self.sessions() as session:
            return await get_scoped(session, Routine, company_id, routine_id, "routine")

    async def list(
        self, company_id: uuid.UUID, *, after: Cursor | None, limit: int
    ) -> tuple[list[Routine], Cursor | None]:
        async with self.sessions() as session:
            await require_company(session, company_id)
            stmt = select(Routine).where(Routine.company_id == company_id)
            return await keyset_page(session, stmt, Routine, after, limit)

    async def update(
        self, actor: Actor, company_id: uuid.UUID, routine_id: uuid.UUID, changes: dict[str, Any]
    ) -> tuple[Routine, str | None]:
        """Change a routine. Turning its webhook on makes a secret (in the answer, once);
        off forgets it."""
        webhook = changes.pop("webhook", None)
        _check(changes)
        try:
            async with company_writes(self.sessions, company_id) as session:
                routine = await _locked(session, company_id, routine_id)
                await _check_references(session, company_id, changes)
                merged = {f: changes.get(f, getattr(routine, f)) for f in ("cron", "timezone")}
                _check(merged)
                rescheduled = any(
                    f in changes and changes[f] != getattr(routine, f) for f in SCHEDULE_FIELDS
                )
                for field, value in changes.items():
                    setattr(routine, field, value)
                if rescheduled:
                    routine.next_slot_at = None  # the scheduler starts it from its clock
                made = webhook and routine.webhook_nonce is None
                if webhook is not None and not (webhook and routine.webhook_nonce):
                    routine.webhook_nonce = new_nonce() if webhook else None
                await session.flush()
                record_activity(
                    session,
                    actor,
                    "routine.updated",
                    entity_type="routine",
                    entity_id=routine.id,
                    company_id=company_id,
                    details={"fields": sorted([*changes, *(["webhook"] if webhook else [])])},
                )
        except IntegrityError as exc:
            raise _name_taken(changes.get("name", "")) from exc
        return routine, await self._secret_of(routine) if made else None

    async def rotate_secret(
        self, actor: Actor, company_id: uuid.UUID, routine_id: uuid.UUID
    ) -> tuple[Routine, str]:
        """A new webhook secret; the old one is refused from now on."""
        async with company_writes(self.sessions, company_id) as session:
            routine = await _locked(session, company_id, routine_id)
            if routine.webhook_nonce is None:
                raise ConflictError(
                    'this routine has no webhook; turn it on with PATCH {"webhook": true}',
                    code="webhook_not_enabled",
                )
            routine.webhook_nonce = new_nonce()
            record_activity(
                session,
                actor,
                "routine.secret_rotated",
                entity_type="routine",
                entity_id=routine.id,
                company_id=company_id,
            )
        secret = await self._secret_of(routine)
        assert secret is not None
        return routine, secret

    async def delete(self, actor: Actor, company_id: uuid.UUID, routine_id: uuid.UUID) -> None:
        """Delete a routine and its history; the issues it made stay."""
        async with company_writes(self.sessions, company_id) as session:
            routine = await get_scoped(
                session, Routine, company_id, routine_id, "routine", for_update=True
            )
            await session.delete(routine)
            record_activity(
                session,
                actor,
                "routine.deleted",
                entity_type="routine",
                entity_id=routine_id,
                company_id=company_id,
                details={"name": routine.name},
            )

    async def run(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        routine_id: uuid.UUID,
        *,
        key: str | None,
        payload: dict[str, Any],
    ) -> ExecutionOutcome:
        """A slot now, keyed by ``key`` (a repeated key is the first call's execution)."""
        async with company_writes(self.sessions, company_id) as session:
            routine = await _locked(session, company_id, routine_id)
            _refuse_disabled(routine)
            return await execute_slot(
                session,
                actor,
                self.numbers,
                routine,
                slot_key=f"manual:{key or uuid.uuid4()}",
                slot_at=self.clock(),
                trigger=Trigger.MANUAL,
                payload=payload,
            )

    async def check_signature(
        self, company_id: uuid.UUID, routine_id: uuid.UUID, body: bytes, signature: str | None
    ) -> str:
        """The routine's webhook secret, if ``signature`` is the body's HMAC under it; else
        ``401 invalid_signature`` (and ``404`` for a routine not of this company)."""
        routine = await self.get(company_id, routine_id)
        secret = await self._secret_of(routine)
        if secret is None or not signature_matches(secret, body, signature):
            raise UnauthorizedError(
                "the signature does not match this routine's webhook secret: send "
                "X-Paperclip-Signature: sha256=<hex HMAC-SHA256 of the body>",
                code="invalid_signature",
                field="x-paperclip-signature",
                source="header",
            )
        return secret

    async def webhook(
        self,
        company_id: uuid.UUID,
        routine_id: uuid.UUID,
        *,
        body: bytes,
        signature: str | None,
        key: str,
    ) -> ExecutionOutcome:
        """A signed delivery: ``401 invalid_signature`` (nothing written) unless the body's
        HMAC under the routine's secret matches; then a slot keyed by ``key``."""
        secret = await self.check_signature(company_id, routine_id, body, signature)
        payload = _payload(body)
        async with company_writes(self.sessions, company_id) as session:
            routine = await _locked(session, company_id, routine_id)
            if routine.webhook_nonce is None or await self._secret_of(routine) != secret:
                raise UnauthorizedError(  # rotated or turned off meanwhile
                    "the routine's webhook secret changed", code="invalid_signature"
                )
            _refuse_disabled(routine)
            return await execute_slot(
                session,
                SYSTEM,
                self.numbers,
                routine,
                slot_key=f"webhook:{key}",
                slot_at=self.clock(),
                trigger=Trigger.WEBHOOK,
                payload=payload,
            )

    async def executions(
        self,
        company_id: uuid.UUID,
        routine_id: uuid.UUID,
        *,
        status: str | None,
        after: Cursor | None,
        limit: int,
    ) -> tuple[list[RoutineExecution], Cursor | None]:
        """The routine's executions, newest first."""
        async with self.sessions() as session:
            await get_scoped(session, Routine, company_id, routine_id, "routine")
            stmt = select(RoutineExecution).where(
                RoutineExecution.company_id == company_id,
                RoutineExecution.routine_id == routine_id,
            )
            if status is not None:
                stmt = stmt.where(RoutineExecution.status == status)
            return await keyset_page(session, stmt, RoutineExecution, after, limit, sort="-created")

    def next_runs(self, routine: Routine, count: int = NEXT_RUNS) -> list[datetime]:
        """The next cron slots (none without a schedule, or while disabled)."""
        if routine.cron is None or not routine.enabled:
            return []
        start = routine.next_slot_at or self.clock()
        return Schedule.of(routine.cron, routine.timezone).after(
            start - timedelta(microseconds=1), count
        )


def _check(fields: dict[str, Any]) -> None:
    """Cron, time zone and templates: ``422`` naming the field, before anything is written."""
    if fields.get("cron") is not None:
        fields["cron"] = check_cron(fields["cron"])
    if "timezone" in fields:
        check_timezone(fields["timezone"])
    for field in ("title", "description"):
        if field in fields:
            check_template(fields[field], field)


async def _check_references(
    session: AsyncSession, company_id: uuid.UUID, fields: dict[str, Any]
) -> None:
    if "agent_id" in fields:
        await get_scoped(session, Agent, company_id, fields["agent_id"], "agent", field="agent_id")
    if fields.get("project_id") is not None:
        await project_ref(session, company_id, fields["project_id"], field="project_id")


async def _locked(session: AsyncSession, company_id: uuid.UUID, routine_id: uuid.UUID) -> Routine:
    """The company's routine, its row locked ``FOR NO KEY UPDATE``, or ``404``."""
    stmt = (
        select(Routine)
        .where(Routine.id == routine_id, Routine.company_id == company_id)
        .with_for_update(**ROUTINE_LOCK)
    )
    routine = (await session.execute(stmt)).scalar_one_or_none()
    if routine is None:
        raise NotFoundError.of("routine", routine_id)
    return routine


def _refuse_disabled(routine: Routine) -> None:
    if not routine.enabled:
        raise ConflictError(
            f"routine {routine.name!r} is disabled; enable it to trigger it",
            code="routine_disabled",
        )


def _payload(body: bytes) -> dict[str, Any]:
    """The webhook's JSON body (the door checked it is JSON); a non-object is kept under ``body``."""
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except ValueError as exc:
        raise InvalidInputError("the body is not JSON", code="malformed_json") from exc
    return value if isinstance(value, dict) else {"body": value}


def _name_taken(name: str) -> ConflictError:
    return ConflictError(
        f"a routine named {name!r} already exists in this company", code="routine_name_taken"
    )
