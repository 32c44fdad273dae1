"""The activity log: every write records one entry in the write's own transaction."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.models import ActivityEntry
from paperclip.services.actor import Actor


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
    session.add(
        ActivityEntry(
            company_id=company_id,
            actor_type=actor.type,
            actor_id=actor.id,
            action=action,
            entity_type=entity_type,
            entity_id=str(entity_id),
            run_id=actor.run_id,
            details=details or {},
        )
    )
