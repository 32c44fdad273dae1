"""Query helpers shared by services: company-scoped lookups and keyset pages.

Pages follow (created_at, id) order; a cursor is that pair, opaque to clients.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.errors import InvalidInputError, NotFoundError

M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Cursor:
    created_at: datetime
    id: uuid.UUID

    def encode(self) -> str:
        raw = json.dumps([self.created_at.isoformat(), str(self.id)]).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, value: str) -> Cursor:
        try:
            padded = value + "=" * (-len(value) % 4)
            created, ident = json.loads(base64.urlsafe_b64decode(padded.encode()))
            return cls(datetime.fromisoformat(created), uuid.UUID(ident))
        except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
            raise InvalidInputError("cursor is not valid", code="invalid_cursor") from exc


async def get_scoped(
    session: AsyncSession,
    model: type[M],
    company_id: uuid.UUID,
    entity_id: uuid.UUID,
    entity: str,
    *,
    for_update: bool = False,
) -> M:
    """The row of ``model`` with this id in this company, or ``<entity>_not_found``.

    A row of another company is reported exactly like a missing one.
    """
    stmt = select(model).where(
        model.id == entity_id,  # type: ignore[attr-defined]
        model.company_id == company_id,  # type: ignore[attr-defined]
    )
    if for_update:
        stmt = stmt.with_for_update()
    row = (await session.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise NotFoundError.of(entity, entity_id)
    return row


async def keyset_page(
    session: AsyncSession, stmt: Select[Any], model: Any, cursor: str | None, limit: int
) -> tuple[list[Any], str | None]:
    """One page of ``stmt`` in (created_at, id) order, and the cursor of the next page."""
    if cursor:
        after = Cursor.decode(cursor)
        stmt = stmt.where(
            or_(
                model.created_at > after.created_at,
                and_(model.created_at == after.created_at, model.id > after.id),
            )
        )
    rows = list(
        (await session.execute(stmt.order_by(model.created_at, model.id).limit(limit + 1)))
        .scalars()
        .all()
    )
    if len(rows) > limit:
        rows = rows[:limit]
        return rows, Cursor(rows[-1].created_at, rows[-1].id).encode()
    return rows, None
