"""Whether a run may start, or go on in a next turn, under its budgets.

A claimed wake's run starts only while every budget of its company, agent
and project allows it, and reserves what each asks a run to hold
(``budget_ledger.admit``, under the budget months' locks, taken for all the
runs of a claim pass by one statement: twenty wakes at once start exactly as
many runs as the budgets allow). A wake that may not
start waits: its task is held ``budget_exceeded`` (a wake without a task is
skipped, with that reason). A run whose budget ran out ends at its next
turn instead of starting it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
from sqlalchemy import and_, exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.actor import SYSTEM
from paperclip.domain.costs.budget_ledger import (
    BUDGET_EXCEEDED,
    Refusal,
    Scope,
    admit,
    budgets_of,
    month_of,
    spent,
)
from paperclip.domain.holds.holds import hold_task
from paperclip.engine.endings.turn_end import finish_run
from paperclip.engine.turns.lifecycle import current_turn, end_turn
from paperclip.models import (
    Company,
    HoldStatus,
    Issue,
    Run,
    RunStatus,
    TaskHold,
    TurnStatus,
    WakeRequest,
    WakeStatus,
)


async def _month(session: AsyncSession, company_id: uuid.UUID, now: datetime) -> str:
    zone = await session.scalar(select(Company.time_zone).where(Company.id == company_id))
    return month_of(now, zone or "UTC")


LOCK_MONTHS = """
WITH wanted AS (
    SELECT DISTINCT budget_id, month FROM unnest($1::uuid[], $2::text[]) AS t(budget_id, month)
), made AS (
    INSERT INTO budget_months (budget_id, month, spent_micros, reserved_micros)
    SELECT budget_id, month, 0, 0 FROM wanted ORDER BY budget_id, month
    ON CONFLICT DO NOTHING
    RETURNING budget_id, month, spent_micros, reserved_micros
), locked AS (
    SELECT m.budget_id, m.month, m.spent_micros, m.reserved_micros
    FROM budget_months m JOIN wanted w ON w.budget_id = m.budget_id AND w.month = m.month
    ORDER BY m.budget_id, m.month
    FOR UPDATE OF m
)
SELECT * FROM made UNION ALL SELECT * FROM locked
"""
"""The budget months a pass's runs would reserve from: made when missing, locked (in budget
order, as every writer of them locks them)."""

LOCK_MADE = """
SELECT budget_id, month, spent_micros, reserved_micros FROM budget_months
WHERE (budget_id, month) IN (SELECT * FROM unnest($1::uuid[], $2::text[]))
ORDER BY budget_id, month
FOR UPDATE
"""
"""The months another transaction made while ``LOCK_MONTHS`` waited for it to commit: its
snapshot, taken before, does not see them."""


@dataclass(slots=True)
class _Month:
    spent_micros: int
    reserved_micros: int


@dataclass(frozen=True, slots=True)
class Reservation:
    """What a run holds of a budget's month, until its own costs replace it or it ends."""

    budget_id: uuid.UUID
    month: str
    micros: int


@dataclass(frozen=True, slots=True)
class Wanted:
    """A run a claim would start, and the budgets that cover it (in id order)."""

    key: object
    budgets: Sequence[Any]
    """Each with ``id``, ``monthly_limit_micros``, ``run_reserve_micros`` (a ``Budget``, or
    its columns as a claim read them)."""
    time_zone: str | None
    """The company's (None: UTC): the budget month is the company's calendar month."""


async def admit_runs(
    driver: asyncpg.Connection, wanted: Sequence[Wanted], now: datetime
) -> dict[object, Refusal | list[Reservation]]:
    """Whether each of ``wanted`` may start under its budgets (in the caller's transaction,
    which keeps their months locked): its refusal, or the reservations to write with it.

    One after the other in their order, each seeing what the ones before it reserve, as
    that many claims one after the other would: twenty wakes at once start exactly as
    many runs as the budgets allow.
    """
    months_of = {w.key: month_of(now, w.time_zone or "UTC") for w in wanted}
    keys = sorted({(b.id, months_of[w.key]) for w in wanted for b in w.budgets})
    if not keys:
        return {w.key: [] for w in wanted}
    ids, names = [k[0] for k in keys], [k[1] for k in keys]
    rows = await driver.fetch(LOCK_MONTHS, ids, names)
    months = {(r[0], r[1]): _Month(r[2], r[3]) for r in rows}
    missing = [k for k in keys if k not in months]
    if missing:
        rows = await driver.fetch(LOCK_MADE, [k[0] for k in missing], [k[1] for k in missing])
        months.update({(r[0], r[1]): _Month(r[2], r[3]) for r in rows})
    decided: dict[object, Refusal | list[Reservation]] = {}
    for w in wanted:
        month = months_of[w.key]
        own = {b.id: months[(b.id, month)] for b in w.budgets}
        refusal = admit(w.budgets, own, month)
        decided[w.key] = (
            refusal
            if refusal is not None
            else [
                Reservation(b.id, month, b.run_reserve_micros)
                for b in w.budgets
                if b.run_reserve_micros > 0
            ]
        )
    return decided


async def next_turn_refusal(session: AsyncSession, run: Run, now: datetime) -> Refusal | None:
    """Why ``run``'s next turn may not start (a budget of it is spent), or None."""
    project_id = (
        await session.scalar(select(Issue.project_id).where(Issue.id == run.issue_id))
        if run.issue_id is not None
        else None
    )
    budgets = await budgets_of(session, Scope(run.company_id, run.agent_id, project_id))
    if not budgets:
        return None
    return await spent(session, budgets, month=await _month(session, run.company_id, now))


def next_turn_admission(
    clock: Callable[[], datetime],
) -> Callable[[AsyncSession, Run], Awaitable[Refusal | None]]:
    """:func:`next_turn_refusal` at ``clock``'s now, for a part that may not import costs
    (a turn's end asks it before a report nudge's turn)."""

    async def refusal(session: AsyncSession, run: Run) -> Refusal | None:
        return await next_turn_refusal(session, run, clock())

    return refusal


async def wait_for_budget(session: AsyncSession, wake: WakeRequest, refusal: Refusal) -> None:
    """The wake may not start a run now: its task is held until the budget allows it again
    (once: a task already held for its budget is not held twice); a wake without a task is
    skipped."""
    if wake.issue_id is None:
        wake.status = WakeStatus.SKIPPED
        wake.payload = {**(wake.payload or {}), "skipped": BUDGET_EXCEEDED}
        return
    held = await session.scalar(
        select(
            exists().where(
                and_(
                    TaskHold.issue_id == wake.issue_id,
                    TaskHold.status == HoldStatus.ACTIVE,
                    TaskHold.kind == BUDGET_EXCEEDED,
                )
            )
        )
    )
    if not held:
        await hold_task(
            session,
            SYSTEM,
            company_id=wake.company_id,
            issue_id=wake.issue_id,
            kind=BUDGET_EXCEEDED,
            reason=refusal.message,
            details={"budget_id": str(refusal.budget.id), "month": refusal.month},
        )


async def end_for_budget(session: AsyncSession, run: Run, refusal: Refusal | None) -> None:
    """A run whose budget ran out between its turns ends instead of starting the next one;
    its task is held until the budget allows it again."""
    turn = await current_turn(session, run)
    if turn is not None and TurnStatus(turn.status).active:
        await end_turn(session, run, turn.number, TurnStatus.FAILED, error_code=BUDGET_EXCEEDED)
    message = (
        refusal.message
        if refusal is not None
        else "a budget of this run was spent during its turn."
    )
    await finish_run(
        session, run, RunStatus.FAILED, error_code=BUDGET_EXCEEDED, error_message=message
    )
    if run.issue_id is not None:
        await hold_task(
            session,
            SYSTEM,
            company_id=run.company_id,
            issue_id=run.issue_id,
            run_id=run.id,
            kind=BUDGET_EXCEEDED,
            reason=message,
        )
