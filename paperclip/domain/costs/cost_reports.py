"""What was spent, as people ask: totals by agent, project, issue, model or day; the events.

Sums run over the cost events of a time range (``since`` inclusive, ``until``
exclusive); a day is a calendar day in the company's time zone. Events whose
model had no price count their tokens and are counted apart
(``unpriced_events``): their cost is not known.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import String, case, cast, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.queries import get_scoped
from paperclip.domain.companies.companies import require_company
from paperclip.errors import InvalidInputError
from paperclip.models import Agent, Company, CostEvent, CostSource, Issue, Project, Run

GroupBy = Literal["agent", "project", "issue", "model", "provider", "day"]
MAX_GROUPS = 1000


@dataclass(frozen=True, slots=True)
class Totals:
    events: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_micros: int = 0
    unpriced_events: int = 0
    runs: int = 0
    """The runs the events belong to (a run counts once however many responses it had)."""


@dataclass(frozen=True, slots=True)
class Group:
    key: str | None
    """The agent's, project's or issue's id, the model, the provider, or the day (``YYYY-MM-DD``)."""
    name: str | None
    """The agent's or project's name, the issue's identifier."""
    totals: Totals


def _sums() -> list[Any]:
    return [
        func.count(CostEvent.id),
        func.coalesce(func.sum(CostEvent.input_tokens), 0),
        func.coalesce(func.sum(CostEvent.cached_input_tokens), 0),
        func.coalesce(func.sum(CostEvent.output_tokens), 0),
        func.coalesce(func.sum(CostEvent.reasoning_tokens), 0),
        func.coalesce(func.sum(CostEvent.cost_micros), 0),
        func.count(case((CostEvent.cost_source == CostSource.UNKNOWN, 1))),
        func.count(func.distinct(CostEvent.run_id)),
    ]


def _totals(row: Any) -> Totals:
    return Totals(*(int(v or 0) for v in row))


async def run_totals(session: AsyncSession, run_id: uuid.UUID) -> Totals:
    """A run's usage and cost, summed (one indexed query: its events are unique by run)."""
    row = (await session.execute(select(*_sums()).where(CostEvent.run_id == run_id))).one()
    return _totals(row)


class CostReports:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def summary(
        self,
        company_id: uuid.UUID,
        *,
        group_by: GroupBy,
        since: datetime | None,
        until: datetime | None,
        filters: dict[str, uuid.UUID | None],
        with_parts: bool = False,
    ) -> tuple[Totals, list[Group]]:
        """The range's totals, and its groups (largest cost first, at most ``MAX_GROUPS``);
        ``with_parts``: the ``issue_id`` filter takes in the issue's parts, all the way down."""
        if since is not None and until is not None and since >= until:
            raise InvalidInputError("since must be before until", field="since", source="query")
        async with self.sessions() as session:
            await require_company(session, company_id)
            await _check_filters(session, company_id, filters)
            zone = await session.scalar(select(Company.time_zone).where(Company.id == company_id))
            where = [CostEvent.company_id == company_id]
            if since is not None:
                where.append(CostEvent.occurred_at >= since)
            if until is not None:
                where.append(CostEvent.occurred_at < until)
            where += _filtered(company_id, filters, with_parts)
            total = _totals((await session.execute(select(*_sums()).where(*where))).one())
            key, name, joins = _grouping(group_by, zone or "UTC")
            stmt = select(key, name, *_sums()).select_from(CostEvent)
            for target, on in joins:
                stmt = stmt.outerjoin(target, on)
            rows = await session.execute(
                stmt.where(*where)
                .group_by(key, name)
                .order_by(func.coalesce(func.sum(CostEvent.cost_micros), 0).desc(), key)
                .limit(MAX_GROUPS)
            )
            groups = [
                Group(None if k is None else str(k), n, _totals(rest)) for k, n, *rest in rows.all()
            ]
        return total, groups

    async def events(
        self,
        company_id: uuid.UUID,
        *,
        filters: dict[str, uuid.UUID | None],
        after_id: int | None,
        limit: int,
        with_parts: bool = False,
    ) -> tuple[list[CostEvent], int | None]:
        """A page of cost events, oldest first (by their id), and the id the next starts after
        (``with_parts`` as for :meth:`summary`)."""
        async with self.sessions() as session:
            await require_company(session, company_id)
            await _check_filters(session, company_id, filters)
            stmt = select(CostEvent).where(
                CostEvent.company_id == company_id, *_filtered(company_id, filters, with_parts)
            )
            if after_id is not None:
                stmt = stmt.where(CostEvent.id > after_id)
            rows = list(
                (await session.execute(stmt.order_by(CostEvent.id).limit(limit + 1))).scalars()
            )
        if len(rows) > limit:
            return rows[:limit], rows[limit - 1].id
        return rows, None


FILTERED = {
    "agent_id": (Agent, "agent"),
    "project_id": (Project, "project"),
    "issue_id": (Issue, "issue"),
    "run_id": (Run, "run"),
}


def _filtered(
    company_id: uuid.UUID, filters: dict[str, uuid.UUID | None], with_parts: bool
) -> list[Any]:
    """The conditions of ``filters``; with ``with_parts``, an issue's are its own and its
    parts' (a part's cost rolls up to the issue it is a part of)."""
    issue_id = filters.get("issue_id")
    if with_parts and issue_id is None:
        raise InvalidInputError(
            "with_parts sums an issue's parts: give issue_id too",
            field="with_parts",
            source="query",
        )
    where = []
    for name, value in filters.items():
        if value is None:
            continue
        if name == "issue_id" and with_parts:
            where.append(CostEvent.issue_id.in_(_issue_tree(company_id, value)))
        else:
            where.append(getattr(CostEvent, name) == value)
    return where


def _issue_tree(company_id: uuid.UUID, root: uuid.UUID) -> Any:
    """The ids of ``root`` and of every issue below it (the tree has no cycle: a trigger
    refuses one, migration 0021)."""
    tree = (
        select(Issue.id)
        .where(Issue.id == root, Issue.company_id == company_id)
        .cte("issue_tree", recursive=True)
    )
    below = select(Issue.id).where(Issue.parent_id == tree.c.id, Issue.company_id == company_id)
    tree = tree.union_all(below)
    return select(tree.c.id)


async def _check_filters(
    session: AsyncSession, company_id: uuid.UUID, filters: dict[str, uuid.UUID | None]
) -> None:
    """A filter naming another company's row is answered like any foreign id (422)."""
    for name, value in filters.items():
        if value is not None:
            model, entity = FILTERED[name]
            await get_scoped(session, model, company_id, value, entity, field=name, source="query")


def _grouping(group_by: GroupBy, zone: str) -> tuple[Any, Any, list[tuple[Any, Any]]]:
    """The grouped column, the name shown beside it, and the joins that name it."""
    if group_by == "agent":
        return CostEvent.agent_id, Agent.name, [(Agent, Agent.id == CostEvent.agent_id)]
    if group_by == "project":
        return CostEvent.project_id, Project.name, [(Project, Project.id == CostEvent.project_id)]
    if group_by == "issue":
        return CostEvent.issue_id, Issue.identifier, [(Issue, Issue.id == CostEvent.issue_id)]
    if group_by == "model":
        return CostEvent.model, cast(None, String), []
    if group_by == "provider":
        return CostEvent.provider, cast(None, String), []
    day = func.to_char(func.timezone(zone, CostEvent.occurred_at), "YYYY-MM-DD")
    return day, cast(None, String), []
