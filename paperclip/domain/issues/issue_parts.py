"""An issue's parts: a parent is not ``done`` while one of its parts is open, unless a person
closes it anyway (``even_with_open_parts``); an agent never does. When a part ends (done,
blocked, cancelled, or its run failed), the parent's assignee is woken with the outcome. A
blocker no parent hears of goes up the org chart: the blocked agent's manager is woken on the
issue, and so on to the top, past which it waits for a person (the inbox)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.actor import SYSTEM, Actor
from paperclip.domain.runs.wakes import request_wake
from paperclip.errors import ConflictError
from paperclip.models import Agent, Issue, IssueStatus, WakeRequest

OPEN_PARTS_SHOWN = 20
"""How many open parts a refusal names."""
PEOPLE = ("user", "api_key")
ENDINGS = (IssueStatus.DONE, IssueStatus.BLOCKED, IssueStatus.CANCELLED)
"""A part's statuses its parent hears of (and a failed run of it)."""
PART_ENDED = "part_ended"
"""The source of the parent's wake."""
ESCALATED = "escalated"
"""The source of a manager's wake on a blocked issue of a report."""
BLOCKED = "blocked"
"""The run outcome that sends an issue up the chart."""
MAX_CHAIN = 100
"""How far up the chart a blocker may climb past managers asked before (the tree has no loop)."""
TOLD = (PART_ENDED, ESCALATED)
"""Wake sources whose reason says what happened (the prompt shows it)."""
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


async def tell_parent(session: AsyncSession, actor: Actor, part: Issue, outcome: str) -> bool:
    """Wake the assignee of ``part``'s parent with ``outcome`` (``done``, ``blocked``,
    ``cancelled``, ``failed``) in the wake's reason, which its prompt shows; whether one was
    woken. Woken twice before it runs, it has one wake (the first reason): its task's context
    lists every part."""
    if part.parent_id is None:
        return False
    parent = await session.get(Issue, part.parent_id)
    if parent is None or parent.assignee_agent_id is None:
        return False
    if parent.status in (IssueStatus.DONE, IssueStatus.CANCELLED):
        return False
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
    return True


async def escalate(session: AsyncSession, issue: Issue, agent_id: uuid.UUID, reason: str) -> bool:
    """Wake the manager of the agent whose run blocked ``issue`` on it (``escalated``), with
    the blocker in the wake's reason; whether one was. A manager is asked once per issue:
    one asked before is passed for its own manager, so two agents never hand a blocker back
    and forth. Past the top of the chart, nobody: the blocked issue waits for a person."""
    agent = await session.get(Agent, agent_id)
    if agent is None:
        return False
    asked = set(
        (
            await session.execute(
                select(WakeRequest.agent_id).where(
                    WakeRequest.issue_id == issue.id, WakeRequest.source == ESCALATED
                )
            )
        ).scalars()
    )
    manager_id = agent.reports_to
    for _ in range(MAX_CHAIN):
        if manager_id is None or manager_id not in asked:
            break
        manager_id = await session.scalar(select(Agent.reports_to).where(Agent.id == manager_id))
    if manager_id is None or manager_id in asked:
        return False
    await request_wake(
        session,
        SYSTEM,
        company_id=issue.company_id,
        agent_id=manager_id,
        issue_id=issue.id,
        source=ESCALATED,
        reason=f"{agent.name}, who reports to you, is blocked on {issue.identifier}: {reason}",
        payload={"blocked": {"agent": agent.name, "reason": reason}},
    )
    return True


async def parts_of(session: AsyncSession, issue_id: uuid.UUID) -> list[Issue]:
    """The issue's parts, oldest first."""
    rows = await session.execute(
        select(Issue).where(Issue.parent_id == issue_id).order_by(Issue.number)
    )
    return list(rows.scalars())
