"""Cost events: each model response's usage recorded once, priced, and charged to budgets.

``record_usage`` runs in the transaction that holds the run's row lock (the
engine's, for a usage its runner reported). The event's ``(run_id, key)`` is
unique, so a usage reported again after a restart is recorded, and charged,
once. A cost that spends a budget stops every live run the budget covers at
its next tool call, in the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.activity import record_activity
from paperclip.common.actor import SYSTEM
from paperclip.domain.costs.budget_ledger import Charged, Scope, charge, month_of, stop_runs
from paperclip.domain.costs.prices import Price, UnpricedModels, price_of
from paperclip.models import Company, CostEvent, CostSource, Issue, Run


@dataclass(frozen=True, slots=True)
class Usage:
    """One model response's usage, as a provider reported it."""

    key: str
    turn: int = 0
    model: str = ""
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_micros: int | None = None
    currency: str = "USD"


@dataclass(frozen=True, slots=True)
class Recorded:
    """A usage recorded for the first time: what it cost, and what budgets it crossed."""

    cost_micros: int | None
    source: CostSource
    scope: Scope
    month: str
    charged: Charged


async def scope_of(session: AsyncSession, run: Run) -> tuple[Scope, str]:
    """Whom ``run`` spends for, and its company's time zone."""
    project_id = (
        await session.scalar(select(Issue.project_id).where(Issue.id == run.issue_id))
        if run.issue_id is not None
        else None
    )
    time_zone = await session.scalar(select(Company.time_zone).where(Company.id == run.company_id))
    return Scope(run.company_id, run.agent_id, project_id), time_zone or "UTC"


async def record_usage(
    session: AsyncSession,
    run: Run,
    usage: Usage,
    *,
    prices: Mapping[str, Price],
    unpriced: UnpricedModels,
    now: datetime,
) -> Recorded | None:
    """Record ``usage`` of the locked ``run`` once; None when it was recorded before."""
    cost, source = usage.cost_micros, CostSource.PROVIDER
    if cost is None:
        price = await price_of(session, usage.model, prices)
        if price is None:
            source = CostSource.UNKNOWN
            unpriced.warn_once(usage.model)
        else:
            source = CostSource.PRICED
            cost = price.cost_micros(
                usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
            )
    scope, time_zone = await scope_of(session, run)
    inserted = await session.scalar(
        insert(CostEvent)
        .values(
            company_id=run.company_id,
            agent_id=run.agent_id,
            project_id=scope.project_id,
            issue_id=run.issue_id,
            run_id=run.id,
            turn=usage.turn,
            key=usage.key,
            provider=run.provider,
            model=usage.model,
            input_tokens=usage.input_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            output_tokens=usage.output_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            cost_micros=cost,
            currency=usage.currency,
            cost_source=source,
            occurred_at=now,
        )
        .on_conflict_do_nothing(index_elements=["run_id", "key"])
        .returning(CostEvent.id)
    )
    if inserted is None:
        return None  # the same response's usage again: counted the first time
    month = month_of(now, time_zone)
    charged = await charge(session, scope, run.id, cost or 0, month=month, now=now)
    for budget, row in charged.warned:
        _alert_activity(session, "budget.warning", budget.company_id, budget.id, row.spent_micros)
    for budget, row in charged.exceeded:
        await stop_runs(session, budget, now=now)
        _alert_activity(session, "budget.exceeded", budget.company_id, budget.id, row.spent_micros)
    return Recorded(cost, source, scope, month, charged)


def _alert_activity(
    session: AsyncSession, action: str, company_id: uuid.UUID, budget_id: uuid.UUID, spent: int
) -> None:
    record_activity(
        session,
        SYSTEM,
        action,
        entity_type="budget",
        entity_id=budget_id,
        company_id=company_id,
        details={"spent_micros": spent},
    )
