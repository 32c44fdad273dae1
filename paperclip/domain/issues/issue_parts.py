"""An issue's parts: a parent is not ``done`` while one of its parts is open, unless a person
closes it anyway (``even_with_open_parts``); an agent never does."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.actor import Actor
from paperclip.errors import ConflictError
from paperclip.models import Issue, IssueStatus

OPEN_PARTS_SHOWN = 20
"""How many open parts a refusal names."""
PEOPLE = ("user", "api_key")
"""Actors that may close a parent whose parts are open: a person, or a key a person holds."""


async def refuse_open_parts(
    session: AsyncSession, actor: Actor, issue: Issue, changes: dict[str, Any]
) -> None:
    """Refuse ``changes`` (``409 issue_parts_open``, naming the open parts) when they make
    ``issue`` done while a part of it is open; a person's ``even_with_open_parts`` lets it
    through. Takes that flag out of ``changes``."""
    anyway = bool(changes.pop("even_with_open_parts", False))
    if changes.get("status") != IssueStatus.DONE or issue.status == IssueStatus.DONE:
        return
    open_parts = await _open_parts(session, issue.id)
    if not open_parts or (anyway and actor.type in PEOPLE):
        return
    named = ", ".join(open_parts[:OPEN_PARTS_SHOWN])
    raise ConflictError(
        f"{named} {'is' if len(open_parts) == 1 else 'are'} still open: a parent is done once "
        "its parts are (a person may close it anyway: even_with_open_parts)",
        code="issue_parts_open",
        extra={"open_parts": open_parts[:OPEN_PARTS_SHOWN]},
    )


async def _open_parts(session: AsyncSession, issue_id: uuid.UUID) -> list[str]:
    rows = await session.execute(
        select(Issue.identifier)
        .where(
            Issue.parent_id == issue_id,
            Issue.status.not_in([IssueStatus.DONE, IssueStatus.CANCELLED]),
        )
        .order_by(Issue.number)
        .limit(OPEN_PARTS_SHOWN + 1)
    )
    return list(rows.scalars())
