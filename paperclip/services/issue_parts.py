"""An issue's parts: a parent is not ``done`` while one of its parts is open, unless a person
closes it anyway (``even_with_open_parts``); an agent never does. When a part ends (done,
blocked, cancelled, or its run failed), the parent's assignee is woken with the outcome."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.errors import ConflictError
from paperclip.models import Issue, IssueStatus
from paperclip.services.actor import Actor
from paperclip.services.wakes import request_wake

OPEN_PARTS_SHOWN = 20
"""How many open parts a refusal names."""
PEOPLE = ("user", "api_key")
ENDINGS = (IssueStatus.DONE, IssueStatus.BLOCKED, IssueStatus.CANCELLED)
"""A part's statuses its parent hears of (and a failed run of it)."""
PART_ENDED = "part_ended"
"""The source of the parent's wake."""
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


async def tell_parent(session: AsyncSession, actor: Actor, part: Issue, outcome: str) -> None:
    """Wake the assignee of ``part``'s parent with ``outcome`` (``done``, ``blocked``,
    ``cancelled``, ``failed``) in the wake's reason, which its prompt shows. Woken twice
    before it runs, it has one wake (the first reason): its task's context lists every part."""
    if part.parent_id is None:
        return
    parent = await session.get(Issue, part.parent_id)
    if parent is None or parent.assignee_agent_id is None:
        return
    if parent.status in (IssueStatus.DONE, IssueStatus.CANCELLED):
        return
    await request_wake(
        session,
        actor,
        company_id=parent.company_id,
        agent_id=parent.assignee_agent_id,
        issue_id=parent.id,
        source=PART_ENDED,
        reason=f"a part of this task ended: {part.identifier} {outcome} ({part.title})",
        payload={"part": {"id": str(part.id), "identifier": part.identifier, "outcome": outcome}},
    )


async def parts_of(session: AsyncSession, issue_id: uuid.UUID) -> list[Issue]:
    """The issue's parts, oldest first."""
    rows = await session.execute(
        select(Issue).where(Issue.parent_id == issue_id).order_by(Issue.number)
    )
    return list(rows.scalars())
