"""Agents' heartbeats: an idle agent is woken every ``heartbeat_seconds`` to look at its queue.

A due agent's row is claimed ``FOR NO KEY UPDATE SKIP LOCKED`` (replicas
beat side by side, never the same agent twice) and its next beat moves one
interval on, whatever this one does:

- paused: nothing (it is not woken while paused);
- busy (a run of it is queued or running): nothing, so a busy agent is never
  woken twice (and a heartbeat wake is not claimed while its agent is busy:
  ``engine.scheduling.claims``);
- a wake of it already queued: the beat folds into that wake
  (``coalesced_count`` + 1);
- otherwise: a wake with source ``heartbeat`` and no issue. At most one such
  wake is queued per agent (a partial unique index), so a concurrent one
  folds into it too.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, exists, or_, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.activity import record_activity
from paperclip.common.actor import SYSTEM
from paperclip.models import (
    ACTIVE_RUN_STATUSES,
    Agent,
    AgentStatus,
    Run,
    WakeRequest,
    WakeStatus,
)

SOURCE = "heartbeat"
REASON = "heartbeat: look at your open assigned issues"


@dataclass(frozen=True, slots=True)
class Beat:
    agent_id: uuid.UUID
    outcome: str
    """``woken``, ``coalesced``, ``busy``, ``paused`` or ``scheduled`` (its first beat set)."""
    wake_id: uuid.UUID | None = None


async def beat_due(session: AsyncSession, now: datetime, limit: int) -> list[Beat]:
    """One pass over agents whose heartbeat is due at ``now`` (at most ``limit``)."""
    agents = (
        (
            await session.execute(
                select(Agent)
                .where(
                    Agent.heartbeat_seconds.is_not(None),
                    or_(Agent.heartbeat_due_at.is_(None), Agent.heartbeat_due_at <= now),
                )
                .order_by(Agent.heartbeat_due_at.nulls_first())
                .limit(limit)
                .with_for_update(skip_locked=True, key_share=True)
            )
        )
        .scalars()
        .all()
    )
    beats = []
    for agent in agents:
        assert agent.heartbeat_seconds is not None
        interval = timedelta(seconds=agent.heartbeat_seconds)
        first = agent.heartbeat_due_at is None
        agent.heartbeat_due_at = now + interval
        if first:
            beats.append(Beat(agent.id, "scheduled"))
        elif agent.status == AgentStatus.PAUSED:
            beats.append(Beat(agent.id, "paused"))
        else:
            beats.append(await _wake(session, agent))
    return beats


async def _busy(session: AsyncSession, agent_id: uuid.UUID) -> bool:
    stmt = select(
        exists().where(and_(Run.agent_id == agent_id, Run.status.in_(ACTIVE_RUN_STATUSES)))
    )
    return bool((await session.execute(stmt)).scalar())


async def _wake(session: AsyncSession, agent: Agent) -> Beat:
    # The queued wake first, waiting for a claim that holds it: once that claim committed,
    # the run it made is seen below, and the agent is busy.
    pending = (
        await session.execute(
            select(WakeRequest)
            .where(WakeRequest.agent_id == agent.id, WakeRequest.status == WakeStatus.QUEUED)
            .order_by(WakeRequest.created_at)
            .limit(1)
            .with_for_update()
        )
    ).scalar_one_or_none()
    if await _busy(session, agent.id):
        return Beat(agent.id, "busy")
    if pending is not None:
        pending.coalesced_count += 1
        return Beat(agent.id, "coalesced", pending.id)
    candidate = uuid.uuid4()
    stmt = insert(WakeRequest).values(
        id=candidate,
        company_id=agent.company_id,
        agent_id=agent.id,
        issue_id=None,
        source=SOURCE,
        reason=REASON,
        payload={"heartbeat_seconds": agent.heartbeat_seconds},
        coalesced_count=0,
        status=WakeStatus.QUEUED,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[WakeRequest.agent_id],
        # Literal SQL: PostgreSQL matches it to the partial index's predicate.
        index_where=text("status = 'queued' AND source = 'heartbeat'"),
        set_={"coalesced_count": WakeRequest.coalesced_count + 1},
    ).returning(WakeRequest.id)
    wake_id = (await session.execute(stmt)).scalar_one()
    created = wake_id == candidate
    record_activity(
        session,
        SYSTEM,
        "wake.requested" if created else "wake.coalesced",
        entity_type="wake_request",
        entity_id=wake_id,
        company_id=agent.company_id,
        details={"source": SOURCE, "agent_id": str(agent.id)},
    )
    return Beat(agent.id, "woken" if created else "coalesced", wake_id)
