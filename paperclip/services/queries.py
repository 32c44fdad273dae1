"""Query helpers shared by services: company-scoped lookups and keyset pages.

Pages follow (created_at, id) order; a page ends at a :class:`Cursor`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.errors import FieldSource, NotFoundError

M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Cursor:
    """A position in (created_at, id) order: the last row of a page.

    Clients see it only signed and bound to its endpoint (``paperclip.api.cursors``).
    """

    created_at: datetime
    id: uuid.UUID


async def get_scoped(
    session: AsyncSession,
    model: type[M],
    company_id: uuid.UUID,
    entity_id: uuid.UUID,
    entity: str,
    *,
    for_update: bool = False,
    field: str | None = None,
    source: FieldSource = "body",
) -> M:
    """The row of ``model`` with this id in this company, or ``<entity>_not_found``.

    A row of another company is reported exactly like a missing one. ``field``
    names the body or query field that referred to it, when one did (then 422).
    """
    stmt = select(model).where(
        model.id == entity_id,  # type: ignore[attr-defined]
        model.company_id == company_id,  # type: ignore[attr-defined]
    )
    if for_update:
        stmt = stmt.with_for_update()
    row = (await session.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise NotFoundError.of(entity, entity_id, field=field, source=source)
    return row


async def keyset_page(
    session: AsyncSession,
    stmt: Select[Any],
    model: Any,
    after: Cursor | None,
    limit: int,
    *,
    descending: bool = False,
) -> tuple[list[Any], Cursor | None]:
    """One page of ``stmt`` in (created_at, id) order (newest first when ``descending``) after
    ``after``, and where the next starts."""
    if after is not None:
        if descending:
            stmt = stmt.where(
                or_(
                    model.created_at < after.created_at,
                    and_(model.created_at == after.created_at, model.id < after.id),
                )
            )
        else:
            stmt = stmt.where(
                or_(
                    model.created_at > after.created_at,
                    and_(model.created_at == after.created_at, model.id > after.id),
                )
            )
    order = (
        (model.created_at.desc(), model.id.desc()) if descending else (model.created_at, model.id)
    )
    rows = list((await session.execute(stmt.order_by(*order).limit(limit + 1))).scalars().all())
    if len(rows) > limit:
        rows = rows[:limit]
        return rows, Cursor(rows[-1].created_at, rows[-1].id)
    return rows, None
