"""The budgets' ledger: what a run may start with, what its costs charge, when it must stop.

A run is held against the budgets of its company, its agent and its issue's
project, in the company's calendar month. Every rule here runs in its
caller's transaction and takes the budget months' row locks (in budget id
order), so the decisions are the database's, whatever replica makes them:

- **admission**: a run starts only while each budget has ``spent + reserved +
  run_reserve <= limit`` (and is not spent); it then reserves ``run_reserve``
  of each, so runs starting together never overspend more than that each;
- **charge**: a cost adds to ``spent`` (and consumes the run's reservation);
  crossing the warning threshold or the limit is recorded once per month, and
  crossing the limit stops every live run the budget covers at its next tool
  call (``runs.budget_stop_at``);
- **release**: a run's end gives back what it still reserves.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol
from zoneinfo import ZoneInfo

from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.models import (
    ACTIVE_RUN_STATUSES,
    Budget,
    BudgetMonth,
    BudgetScope,
    Issue,
    Run,
    RunReservation,
)

BUDGET_EXCEEDED = "budget_exceeded"


def month_of(now: datetime, time_zone: str) -> str:
    """The calendar month (``YYYY-MM``) ``now`` falls in, in ``time_zone``."""
    return now.astimezone(ZoneInfo(time_zone)).strftime("%Y-%m")


@dataclass(frozen=True, slots=True)
class Scope:
    """Whom a run spends for: its company, its agent, its issue's project."""

    company_id: uuid.UUID
    agent_id: uuid.UUID
    project_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """The budget that keeps a run from starting or going on, and its month's figures."""

    budget: Budget
    month: str
    spent_micros: int
    reserved_micros: int

    @property
    def message(self) -> str:
        limit = self.budget.monthly_limit_micros
        return (
            f"the {self.budget.scope} budget ({_money(limit, self.budget.currency)} a month) is "
            f"spent for {self.month}: {_money(self.spent_micros, self.budget.currency)} spent"
            + (
                f", {_money(self.reserved_micros, self.budget.currency)} held by running runs"
                if self.reserved_micros
                else ""
            )
            + ". Raise it, or wait for the next month: held work then goes on by itself."
        )


@dataclass
class Charged:
    """What a cost changed: the budgets whose warning threshold or limit it crossed."""

    warned: list[tuple[Budget, BudgetMonth]] = field(default_factory=list)
    exceeded: list[tuple[Budget, BudgetMonth]] = field(default_factory=list)


def _money(micros: int, currency: str) -> str:
    return f"{micros / 1_000_000:,.2f} {currency}"


async def budgets_of(session: AsyncSession, scope: Scope) -> list[Budget]:
    """The budgets that cover ``scope``, in id order (the lock order)."""
    covered = [
        and_(Budget.scope == BudgetScope.COMPANY, Budget.scope_id == scope.company_id),
        and_(Budget.scope == BudgetScope.AGENT, Budget.scope_id == scope.agent_id),
    ]
    if scope.project_id is not None:
        covered.append(
            and_(Budget.scope == BudgetScope.PROJECT, Budget.scope_id == scope.project_id)
        )
    rows = await session.execute(
        select(Budget)
        .where(Budget.company_id == scope.company_id, or_(*covered))
        .order_by(Budget.id)
    )
    return list(rows.scalars())


async def budgets_covering(
    session: AsyncSession, scopes: Collection[Scope]
) -> dict[Scope, list[Budget]]:
    """``budgets_of`` each of ``scopes``, in one statement."""
    if not scopes:
        return {}
    companies = {s.company_id for s in scopes}
    agents = {s.agent_id for s in scopes}
    projects = {s.project_id for s in scopes if s.project_id is not None}
    covered = [
        and_(Budget.scope == BudgetScope.COMPANY, Budget.scope_id.in_(companies)),
        and_(Budget.scope == BudgetScope.AGENT, Budget.scope_id.in_(agents)),
    ]
    if projects:
        covered.append(and_(Budget.scope == BudgetScope.PROJECT, Budget.scope_id.in_(projects)))
    rows = await session.execute(
        select(Budget).where(Budget.company_id.in_(companies), or_(*covered)).order_by(Budget.id)
    )
    found = list(rows.scalars())
    return {
        scope: [
            b
            for b in found
            if b.company_id == scope.company_id
            and (b.scope, b.scope_id)
            in {
                (BudgetScope.COMPANY, scope.company_id),
                (BudgetScope.AGENT, scope.agent_id),
                (BudgetScope.PROJECT, scope.project_id),
            }
        ]
        for scope in scopes
    }


async def months_of(
    session: AsyncSession, budgets: Sequence[Budget], month: str, *, lock: bool
) -> dict[uuid.UUID, BudgetMonth]:
    """Each budget's row for ``month`` (made when missing), locked when ``lock``."""
    if not budgets:
        return {}
    ids = [b.id for b in budgets]
    await session.execute(
        insert(BudgetMonth)
        .values(
            [{"budget_id": i, "month": month, "spent_micros": 0, "reserved_micros": 0} for i in ids]
        )
        .on_conflict_do_nothing()
    )
    stmt = (
        select(BudgetMonth)
        .where(BudgetMonth.budget_id.in_(ids), BudgetMonth.month == month)
        .order_by(BudgetMonth.budget_id)
        .execution_options(populate_existing=True)
    )
    if lock:
        stmt = stmt.with_for_update()
    return {row.budget_id: row for row in (await session.execute(stmt)).scalars()}


class MonthFigures(Protocol):
    spent_micros: int
    reserved_micros: int


def refusal_of(budget: Budget, row: MonthFigures, month: str, *, reserve: int) -> Refusal | None:
    """Why ``budget`` refuses a run that would reserve ``reserve`` in its month ``row``, or
    None."""
    limit = budget.monthly_limit_micros
    if row.spent_micros >= limit or row.spent_micros + row.reserved_micros + reserve > limit:
        return Refusal(budget, month, row.spent_micros, row.reserved_micros)
    return None


def admit(
    budgets: Sequence[Budget], months: Mapping[uuid.UUID, MonthFigures], month: str
) -> Refusal | None:
    """Whether a new run under ``budgets`` (``budgets_of`` its scope, or their rows as a claim
    read them) may start, given each one's ``month`` row, locked by the caller; None: yes,
    and each row's ``reserved_micros`` now holds what the run reserves of it (the caller
    writes the rows and the run's reservations)."""
    for budget in budgets:
        refused = refusal_of(budget, months[budget.id], month, reserve=budget.run_reserve_micros)
        if refused is not None:
            return refused
    for budget in budgets:
        months[budget.id].reserved_micros += budget.run_reserve_micros
    return None


async def spent(session: AsyncSession, budgets: Sequence[Budget], *, month: str) -> Refusal | None:
    """The one of ``budgets`` that is spent this month, if one is (no lock, no reservation)."""
    if not budgets:
        return None
    months = await months_of(session, budgets, month, lock=False)
    for budget in budgets:
        row = months[budget.id]
        if row.spent_micros >= budget.monthly_limit_micros:
            return Refusal(budget, month, row.spent_micros, row.reserved_micros)
    return None


async def charge(
    session: AsyncSession,
    scope: Scope,
    run_id: uuid.UUID,
    cost_micros: int,
    *,
    month: str,
    now: datetime,
) -> Charged:
    """Add a run's cost to its budgets' month; what it crossed (each once a month)."""
    charged = Charged()
    budgets = await budgets_of(session, scope)
    if not budgets or cost_micros <= 0:
        return charged
    months = await months_of(session, budgets, month, lock=True)
    held = {
        r.budget_id: r
        for r in (
            await session.execute(
                select(RunReservation)
                .where(RunReservation.run_id == run_id)
                .order_by(RunReservation.budget_id)
                .with_for_update()
            )
        ).scalars()
    }
    for budget in budgets:
        row = months[budget.id]
        reservation = held.get(budget.id)
        if reservation is not None and reservation.month == month:
            consumed = min(cost_micros, reservation.micros)
            reservation.micros -= consumed
            row.reserved_micros -= consumed
        row.spent_micros += cost_micros
        limit = budget.monthly_limit_micros
        if row.warned_at is None and row.spent_micros * 100 >= budget.warn_percent * limit:
            row.warned_at = now
            charged.warned.append((budget, row))
        if row.exceeded_at is None and row.spent_micros >= limit:
            row.exceeded_at = now
            charged.exceeded.append((budget, row))
    return charged


async def stop_runs(session: AsyncSession, budget: Budget, *, now: datetime) -> int:
    """Every live run ``budget`` covers stops at its next tool call; how many were told."""
    stmt = update(Run).where(
        Run.company_id == budget.company_id,
        Run.status.in_(ACTIVE_RUN_STATUSES),
        Run.budget_stop_at.is_(None),
    )
    if budget.scope == BudgetScope.AGENT:
        stmt = stmt.where(Run.agent_id == budget.scope_id)
    elif budget.scope == BudgetScope.PROJECT:
        stmt = stmt.where(
            Run.issue_id.in_(select(Issue.id).where(Issue.project_id == budget.scope_id))
        )
    done = await session.execute(stmt.values(budget_stop_at=now))
    return int(getattr(done, "rowcount", 0) or 0)


async def release(session: AsyncSession, run_id: uuid.UUID) -> None:
    """A run ended: what it still reserves goes back to its budgets (once: the rows go)."""
    freed = (
        await session.execute(
            delete(RunReservation)
            .where(RunReservation.run_id == run_id)
            .returning(RunReservation.budget_id, RunReservation.month, RunReservation.micros)
        )
    ).all()
    for budget_id, month, micros in sorted(freed):
        if micros:
            await session.execute(
                update(BudgetMonth)
                .where(BudgetMonth.budget_id == budget_id, BudgetMonth.month == month)
                .values(reserved_micros=BudgetMonth.reserved_micros - micros)
            )
