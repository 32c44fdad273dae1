"""Query helpers shared by services: company-scoped lookups and keyset pages.

Pages follow (created_at, id) order unless a list offers another sort (a
timestamp column, either way); a page ends at a :class:`Cursor`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

from sqlalchemy import Select, Update, and_, bindparam, func, or_, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.errors import FieldSource, NotFoundError

M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Cursor:
    """A position in (created_at, id) order: the last row of a page.

    In a list sorted by another timestamp, ``created_at`` holds that column's value.
    Clients see it only signed and bound to its endpoint and its sort
    (``paperclip.http.cursors``).
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


SortKey = Literal["created", "-created", "updated", "-updated"]
"""A list's order: ``created`` (oldest first, the default) or ``updated``; ``-`` reverses."""


async def keyset_page(
    session: AsyncSession,
    stmt: Select[Any],
    model: Any,
    after: Cursor | None,
    limit: int,
    sort: SortKey = "created",
    *,
    with_columns: bool = False,
) -> tuple[list[Any], Cursor | None]:
    """One page of ``stmt`` in (``sort``'s column, id) order after ``after``, and where the
    next starts. The id breaks ties in the same direction, so the order is total.

    ``with_columns``: ``stmt`` selects ``model`` then more columns, and the page is its rows
    (``model`` first in each) rather than the models alone."""
    descending = sort.startswith("-")
    column = getattr(model, f"{sort.lstrip('-')}_at")
    if after is not None:
        if descending:
            stmt = stmt.where(
                or_(
                    column < after.created_at, and_(column == after.created_at, model.id < after.id)
                )
            )
        else:
            stmt = stmt.where(
                or_(
                    column > after.created_at, and_(column == after.created_at, model.id > after.id)
                )
            )
    order = (column.desc(), model.id.desc()) if descending else (column, model.id)
    result = await session.execute(stmt.order_by(*order).limit(limit + 1))
    rows = list(result.all() if with_columns else result.scalars().all())
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1][0] if with_columns else rows[-1]
        return rows, Cursor(getattr(last, column.key), last.id)
    return rows, None


def update_each(model: Any, names: Sequence[str]) -> Update:
    """One ``UPDATE`` that gives each row of ``model`` (by ``id``) its own values of the
    columns ``names``, where an ORM flush sends one statement a row. Its parameters are one
    array per column (``each_values``): ``UPDATE ... FROM unnest(<arrays>)``, the same
    statement whatever the number of rows, so it is compiled and planned once."""
    table = model.__table__
    columns = ["id", *names]
    arrays = [bindparam(f"each_{n}", type_=ARRAY(table.c[n].type)) for n in columns]
    given = func.unnest(*arrays).table_valued(*columns).render_derived(name="given")
    return (
        update(model)
        .where(model.id == given.c.id)
        .values({n: given.c[n] for n in names})
        .execution_options(synchronize_session=False)
    )


def each_values(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, list[Any]]:
    """``update_each``'s parameters for ``rows`` (each with ``id`` and ``names``)."""
    return {f"each_{n}": [row[n] for row in rows] for n in ["id", *names]}
