"""The org chart: who an agent reports to, the tree it makes, and the refusals it holds.

The database holds the tree (migration 0021): a trigger refuses a manager of
another company and one that would close a loop, one change of a company's
tree at a time. This module reads the tree, checks a reference before a write
(a clear ``422`` naming the field), and turns the trigger's refusals into the
API's errors (a loop is ``422 reports_to_cycle``, nothing written).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.errors import InvalidInputError, NotFoundError, PaperclipError
from paperclip.models import ACTIVE_RUN_STATUSES, Agent, Run

REFUSALS = {
    "agents_reports_to_no_cycle": lambda: InvalidInputError(
        "an agent cannot report to itself or to one of the agents below it",
        code="reports_to_cycle",
        field="reports_to",
    ),
    "agents_reports_to_same_company": lambda: NotFoundError.of(
        "agent", "of reports_to", field="reports_to"
    ),
    "issues_parent_id_no_cycle": lambda: InvalidInputError(
        "an issue cannot be a part of itself or of one of its own parts",
        code="parent_cycle",
        field="parent_id",
    ),
    "issues_parent_id_same_company": lambda: NotFoundError.of(
        "issue", "of parent_id", field="parent_id"
    ),
}
"""The tree guards' constraint names, and the error each one is for a caller."""


def tree_refusal(exc: IntegrityError) -> PaperclipError | None:
    """The caller's error for a refusal of the tree guards, or None: another violation."""
    constraint = getattr(getattr(exc.orig, "__cause__", None), "constraint_name", None)
    make = REFUSALS.get(constraint or "")
    return make() if make is not None else None


async def lock_tree(session: AsyncSession, company_id: uuid.UUID) -> None:
    """Take the company's org chart for this transaction, before any agent's row: the
    guard takes it too, but only at the write, when a move made at the same time may
    already hold the other agent's row (and each would wait for the other)."""
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
        {"key": f"agents tree of {company_id}"},
    )


async def manager_ref(session: AsyncSession, company_id: uuid.UUID, manager_id: uuid.UUID) -> Agent:
    """The company's agent ``reports_to`` names (``FOR KEY SHARE``, as the foreign key
    takes it), or ``422 agent_not_found`` naming the field."""
    manager = (
        await session.execute(
            select(Agent)
            .where(Agent.company_id == company_id, Agent.id == manager_id)
            .with_for_update(key_share=True, read=True)
        )
    ).scalar_one_or_none()
    if manager is None:
        raise NotFoundError.of("agent", manager_id, field="reports_to")
    return manager


@dataclass(frozen=True, slots=True)
class OrgNode:
    """One agent in its company's tree: its place (``depth``, 0 at the top) and how many
    runs it has going now."""

    agent: Agent
    depth: int
    active_runs: int


TREE = text(
    """
    WITH RECURSIVE tree(id, depth, path) AS (
        SELECT id, 0, ARRAY[lower(name)::text, id::text]
        FROM agents WHERE company_id = :company AND reports_to IS NULL
        UNION ALL
        SELECT a.id, t.depth + 1, t.path || ARRAY[lower(a.name)::text, a.id::text]
        FROM agents a JOIN tree t ON a.reports_to = t.id
        WHERE a.company_id = :company
    )
    SELECT id, depth FROM tree ORDER BY path
    """
)
"""Each agent under its manager, depth first, reports by name."""


async def org_chart(session: AsyncSession, company_id: uuid.UUID) -> list[OrgNode]:
    """The company's agents as a tree, depth first: each one after its manager."""
    placed = (await session.execute(TREE, {"company": company_id})).all()
    agents = {
        agent.id: agent
        for agent in (
            await session.execute(select(Agent).where(Agent.company_id == company_id))
        ).scalars()
    }
    rows = await session.execute(
        select(Run.agent_id, func.count())
        .where(Run.company_id == company_id, Run.status.in_(ACTIVE_RUN_STATUSES))
        .group_by(Run.agent_id)
    )
    running = {agent_id: count for agent_id, count in rows}
    return [
        OrgNode(agents[row.id], row.depth, running.get(row.id, 0))
        for row in placed
        if row.id in agents
    ]


SUBTREE = text(
    """
    WITH RECURSIVE below(id) AS (
        SELECT id FROM agents WHERE company_id = :company AND reports_to = :manager
        UNION
        SELECT a.id FROM agents a JOIN below b ON a.reports_to = b.id
        WHERE a.company_id = :company
    )
    SELECT id FROM below
    """
)


async def reports_below(
    session: AsyncSession, company_id: uuid.UUID, manager_id: uuid.UUID
) -> set[uuid.UUID]:
    """Every agent that reports to ``manager_id``, directly or through others."""
    rows = await session.execute(SUBTREE, {"company": company_id, "manager": manager_id})
    return {row.id for row in rows}
