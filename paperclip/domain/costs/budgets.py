"""Budgets as people manage them: make, read, change, delete; each with this month's figures.

A budget covers a company, one of its agents or one of its projects (one
budget per scope). Raising one, or deleting it, may let held work go on: the
budget keeper (``paperclip/engine/costs/keeper.py``) releases held tasks and
lifts the stop of live runs on its next pass.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import Cursor, get_scoped, keyset_page
from paperclip.domain.companies.companies import company_writes, require_company
from paperclip.domain.costs.budget_ledger import month_of
from paperclip.errors import ConflictError, InvalidInputError
from paperclip.models import Agent, Budget, BudgetMonth, BudgetScope, Company, Project


@dataclass(frozen=True, slots=True)
class BudgetView:
    """A budget and its current month (in its company's time zone)."""

    budget: Budget
    month: str
    spent_micros: int
    reserved_micros: int
    warned: bool
    exceeded: bool


class BudgetService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def create(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        *,
        scope: str,
        scope_id: uuid.UUID | None,
        monthly_limit_micros: int,
        warn_percent: int,
        run_reserve_micros: int,
        currency: str,
    ) -> BudgetView:
        try:
            async with company_writes(self.sessions, company_id) as session:
                target = await _scope_target(session, company_id, scope, scope_id)
                budget = Budget(
                    id=uuid.uuid4(),
                    company_id=company_id,
                    scope=scope,
                    scope_id=target,
                    monthly_limit_micros=monthly_limit_micros,
                    warn_percent=warn_percent,
                    run_reserve_micros=run_reserve_micros,
                    currency=currency,
                )
                session.add(budget)
                await session.flush()
                record_activity(
                    session,
                    actor,
                    "budget.created",
                    entity_type="budget",
                    entity_id=budget.id,
                    company_id=company_id,
                    details={"scope": scope, "scope_id": str(target)},
                )
                return await _view(session, budget)
        except IntegrityError as exc:
            raise ConflictError(
                f"this {scope} has a budget already: change it instead", code="budget_exists"
            ) from exc

    async def get(self, company_id: uuid.UUID, budget_id: uuid.UUID) -> BudgetView:
        async with self.sessions() as session:
            budget = await get_scoped(session, Budget, company_id, budget_id, "budget")
            return await _view(session, budget)

    async def list(
        self, company_id: uuid.UUID, *, after: Cursor | None, limit: int
    ) -> tuple[list[BudgetView], Cursor | None]:
        async with self.sessions() as session:
            await require_company(session, company_id)
            rows, end = await keyset_page(
                session, select(Budget).where(Budget.company_id == company_id), Budget, after, limit
            )
            return [await _view(session, b) for b in rows], end

    async def update(
        self, actor: Actor, company_id: uuid.UUID, budget_id: uuid.UUID, changes: dict[str, Any]
    ) -> BudgetView:
        async with company_writes(self.sessions, company_id) as session:
            budget = await get_scoped(
                session, Budget, company_id, budget_id, "budget", for_update=True
            )
            for name, value in changes.items():
                setattr(budget, name, value)
            await session.flush()
            record_activity(
                session,
                actor,
                "budget.updated",
                entity_type="budget",
                entity_id=budget.id,
                company_id=company_id,
                details={"fields": sorted(changes)},
            )
            return await _view(session, budget)

    async def delete(self, actor: Actor, company_id: uuid.UUID, budget_id: uuid.UUID) -> None:
        async with company_writes(self.sessions, company_id) as session:
            budget = await get_scoped(
                session, Budget, company_id, budget_id, "budget", for_update=True
            )
            await session.delete(budget)
            record_activity(
                session,
                actor,
                "budget.deleted",
                entity_type="budget",
                entity_id=budget_id,
                company_id=company_id,
                details={"scope": budget.scope, "scope_id": str(budget.scope_id)},
            )


async def _scope_target(
    session: AsyncSession, company_id: uuid.UUID, scope: str, scope_id: uuid.UUID | None
) -> uuid.UUID:
    """The id a budget of ``scope`` covers: the company's own, or one of its agents or projects."""
    if scope == BudgetScope.COMPANY:
        if scope_id not in (None, company_id):
            raise InvalidInputError(
                "a company budget covers its own company: leave scope_id out",
                field="scope_id",
            )
        return company_id
    if scope_id is None:
        raise InvalidInputError(f"a {scope} budget names its {scope} (scope_id)", field="scope_id")
    model = Agent if scope == BudgetScope.AGENT else Project
    await get_scoped(session, model, company_id, scope_id, scope, field="scope_id")
    return scope_id


async def _view(session: AsyncSession, budget: Budget) -> BudgetView:
    zone = await session.scalar(select(Company.time_zone).where(Company.id == budget.company_id))
    month = month_of(datetime.now(UTC), zone or "UTC")
    row = await session.get(BudgetMonth, (budget.id, month))
    spent = row.spent_micros if row else 0
    return BudgetView(
        budget,
        month,
        spent,
        row.reserved_micros if row else 0,
        warned=spent * 100 >= budget.warn_percent * budget.monthly_limit_micros,
        exceeded=spent >= budget.monthly_limit_micros,
    )
