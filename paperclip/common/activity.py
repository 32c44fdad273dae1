"""The activity log: every write records one entry in the write's own transaction."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.actor import Actor
from paperclip.models import ActivityEntry


def activity_row(
    actor: Actor,
    action: str,
    *,
    entity_type: str,
    entity_id: object,
    company_id: uuid.UUID | None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The values of one entry."""
    return {
        "company_id": company_id,
        "actor_type": actor.type,
        "actor_id": actor.id,
        "action": action,
        "entity_type": entity_type,
        "entity_id": str(entity_id),
        "run_id": actor.run_id,
        "details": details or {},
    }


def record_activity(
    session: AsyncSession,
    actor: Actor,
    action: str,
    *,
    entity_type: str,
    entity_id: object,
    company_id: uuid.UUID | None,
    details: dict[str, Any] | None = None,
) -> None:
    """One entry, written with the session's next flush."""
    session.add(
        ActivityEntry(
            **activity_row(
                actor,
                action,
                entity_type=entity_type,
                entity_id=entity_id,
                company_id=company_id,
                details=details,
            )
        )
    )


async def write_activity(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Many entries (``activity_row``) now, in one statement (a thousand rows to a statement)."""
    if rows:
        # RETURNING makes it one multi-row INSERT; without it, a statement per row.
        await session.execute(insert(ActivityEntry).returning(ActivityEntry.id), list(rows))
