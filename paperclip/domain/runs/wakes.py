"""Wake requests: coalesced while queued, deduplicated by idempotency key, both by the database.

A run's way: from ``issues/issues.py`` (or a comment, a routine, a retry);
next, the wake's commit notifies every replica (a trigger, migration 0004) and
``engine/scheduling/scheduler.py`` claims it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import activity_row, record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import get_scoped
from paperclip.domain.companies.companies import company_writes
from paperclip.errors import ConflictError
from paperclip.models import Agent, Issue, WakeKey, WakeRequest, WakeStatus

WAKES_CHANNEL = "paperclip_wakes"
"""Every replica's scheduler LISTENs here; a queued wake or an ended run notifies it (triggers),
and so does a lost run's queued turn (``notify_resumption``)."""


RESUMPTION = "resume"
"""The payload that tells the schedulers a lost run's next turn is queued (a runner may take it)."""


async def notify_wakes(session: AsyncSession) -> None:
    """Tell every scheduler, when the caller's transaction commits, that a queued wake may be
    claimable now (for a change no trigger sees, such as a hold settled without a new wake)."""
    await session.execute(select(func.pg_notify(WAKES_CHANNEL, "")))


async def notify_resumption(session: AsyncSession) -> None:
    """Tell every scheduler, when the caller's transaction commits, that a lost run's next
    turn waits for a runner: only then (or on a slow poll) do they look for one."""
    await session.execute(select(func.pg_notify(WAKES_CHANNEL, RESUMPTION)))


@dataclass(frozen=True, slots=True)
class WakeOutcome:
    wake: WakeRequest
    created: bool
    """False when the request was folded into an existing one (coalesced or deduplicated)."""
    deduplicated: bool = False
    """True when the idempotency key was seen before: nothing changed."""


async def request_wake(
    session: AsyncSession,
    actor: Actor,
    *,
    company_id: uuid.UUID,
    agent_id: uuid.UUID,
    issue_id: uuid.UUID | None,
    source: str,
    reason: str = "",
    payload: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
) -> WakeOutcome:
    """Record a wake inside the caller's transaction.

    The key row is written first, pointing at the wake this call would create;
    a concurrent twin blocks on the key's primary key and then finds the
    winner's wake. A queued wake for the same agent and issue absorbs the new
    one (``coalesced_count`` + 1) through the partial unique index.
    """
    candidate = uuid.uuid4()
    if idempotency_key is not None:
        fingerprint = request_fingerprint(issue_id, source, reason, payload or {})
        claimed = await session.execute(
            insert(WakeKey)
            .values(
                company_id=company_id,
                agent_id=agent_id,
                key=idempotency_key,
                wake_request_id=candidate,
                request_hash=fingerprint,
            )
            .on_conflict_do_nothing()
            .returning(WakeKey.key)
        )
        if claimed.scalar_one_or_none() is None:
            existing_id, first_hash = (
                await session.execute(
                    select(WakeKey.wake_request_id, WakeKey.request_hash).where(
                        WakeKey.company_id == company_id,
                        WakeKey.agent_id == agent_id,
                        WakeKey.key == idempotency_key,
                    )
                )
            ).one()
            if first_hash is not None and first_hash != fingerprint:
                raise ConflictError(
                    "this idempotency_key was used for a different request to this agent; "
                    "use a new key for a new request",
                    code="idempotency_key_reused",
                    field="idempotency_key",
                )
            wake = (
                await session.execute(select(WakeRequest).where(WakeRequest.id == existing_id))
            ).scalar_one()
            return WakeOutcome(wake=wake, created=False, deduplicated=True)

    stmt = insert(WakeRequest).values(
        id=candidate,
        company_id=company_id,
        agent_id=agent_id,
        issue_id=issue_id,
        source=source,
        reason=reason,
        payload=payload or {},
        idempotency_key=idempotency_key,
        coalesced_count=0,
        status=WakeStatus.QUEUED,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[WakeRequest.agent_id, WakeRequest.issue_id],
        # Literal SQL, not bound values: PostgreSQL must match it to the partial
        # index's predicate, which a generic prepared plan cannot do with parameters.
        index_where=text("status = 'queued' AND issue_id IS NOT NULL"),
        set_={
            "coalesced_count": WakeRequest.coalesced_count + 1,
            "updated_at": stmt.excluded.updated_at,
        },
    ).returning(WakeRequest.id)
    wake_id = (await session.execute(stmt)).scalar_one()
    created = wake_id == candidate
    if not created and idempotency_key is not None:
        await session.execute(
            update(WakeKey)
            .where(
                WakeKey.company_id == company_id,
                WakeKey.agent_id == agent_id,
                WakeKey.key == idempotency_key,
            )
            .values(wake_request_id=wake_id)
        )
    wake = (
        await session.execute(
            select(WakeRequest)
            .where(WakeRequest.id == wake_id)
            .execution_options(populate_existing=True)
        )
    ).scalar_one()
    record_activity(
        session,
        actor,
        "wake.requested" if created else "wake.coalesced",
        entity_type="wake_request",
        entity_id=wake.id,
        company_id=company_id,
        details={"source": source, "agent_id": str(agent_id)},
    )
    return WakeOutcome(wake=wake, created=created)


@dataclass(frozen=True, slots=True)
class NewIssueWake:
    """A wake of an agent for an issue written in the same transaction."""

    company_id: uuid.UUID
    agent_id: uuid.UUID
    issue_id: uuid.UUID
    source: str
    reason: str
    payload: dict[str, Any]


async def queue_wakes_for_new_issues(
    session: AsyncSession,
    actor: Actor,
    wanted: Sequence[NewIssueWake],
    activity: list[dict[str, Any]],
) -> list[uuid.UUID]:
    """Queue a wake for each issue of ``wanted`` (written, in this transaction, by the caller),
    in one ``INSERT``; their ids, in ``wanted``'s order. Their activity entries are added to
    ``activity`` (``activity_row``s), for the caller to write with its own.

    What ``request_wake`` does without a key, for many at once: nothing can be
    queued yet for an issue this transaction wrote, so none coalesces.
    """
    rows = [
        {
            "id": uuid.uuid4(),
            "company_id": w.company_id,
            "agent_id": w.agent_id,
            "issue_id": w.issue_id,
            "source": w.source,
            "reason": w.reason,
            "payload": w.payload,
            "coalesced_count": 0,
            "status": WakeStatus.QUEUED,
        }
        for w in wanted
    ]
    if rows:
        # RETURNING makes it one multi-row INSERT; without it, a statement per row.
        await session.execute(insert(WakeRequest).returning(WakeRequest.id), rows)
    activity += [
        activity_row(
            actor,
            "wake.requested",
            entity_type="wake_request",
            entity_id=row["id"],
            company_id=row["company_id"],
            details={"source": row["source"], "agent_id": str(row["agent_id"])},
        )
        for row in rows
    ]
    return [row["id"] for row in rows]


def mark_claimed(wake: WakeRequest, run_id: uuid.UUID) -> None:
    """The (locked) wake became the run ``run_id``: it is never claimed again."""
    wake.status, wake.claimed_at, wake.run_id = WakeStatus.CLAIMED, datetime.now(UTC), run_id


def request_fingerprint(
    issue_id: uuid.UUID | None, source: str, reason: str, payload: dict[str, Any]
) -> str:
    """sha256 of what a wake request asks for: a reused idempotency key must ask the same."""
    canonical = json.dumps(
        [str(issue_id) if issue_id else None, source, reason, payload],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class WakeService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def wake_agent(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        agent_id: uuid.UUID,
        *,
        issue_id: uuid.UUID | None,
        reason: str,
        payload: dict[str, Any],
        idempotency_key: str | None,
    ) -> WakeOutcome:
        async with company_writes(self.sessions, company_id) as session:
            await get_scoped(session, Agent, company_id, agent_id, "agent")
            if issue_id is not None:
                await get_scoped(session, Issue, company_id, issue_id, "issue", field="issue_id")
            return await request_wake(
                session,
                actor,
                company_id=company_id,
                agent_id=agent_id,
                issue_id=issue_id,
                source="manual",
                reason=reason,
                payload=payload,
                idempotency_key=idempotency_key,
            )
