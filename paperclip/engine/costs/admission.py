"""Whether a run may start, or go on in a next turn, under its budgets.

A claimed wake's run starts only while every budget of its company, agent
and project allows it, and reserves what each asks a run to hold
(``budget_ledger.admit``, under the budget months' locks: twenty wakes at
once start exactly as many runs as the budgets allow). A wake that may not
start waits: its task is held ``budget_exceeded`` (a wake without a task is
skipped, with that reason). A run whose budget ran out ends at its next
turn instead of starting it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime

from sqlalchemy import and_, exists, select
from sqlalchemy.ext.asyncio import AsyncSession

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
from paperclip.services.actor import SYSTEM
from paperclip.services.budget_ledger import (
    BUDGET_EXCEEDED,
    Refusal,
    Scope,
    admit,
    budgets_of,
    month_of,
    spent,
)
from paperclip.services.holds import hold_task


class BudgetRefused(Exception):
    """A run may not start: ``refusal`` says which budget and why."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


async def _month(session: AsyncSession, company_id: uuid.UUID, now: datetime) -> str:
    zone = await session.scalar(select(Company.time_zone).where(Company.id == company_id))
    return month_of(now, zone or "UTC")


async def admit_run(
    session: AsyncSession,
    *,
    company_id: uuid.UUID,
    agent_id: uuid.UUID,
    issue: Issue | None,
    run_id: uuid.UUID,
    now: datetime,
) -> None:
    """Reserve what the run's budgets ask of a run; raises BudgetRefused when one is spent."""
    scope = Scope(company_id, agent_id, issue.project_id if issue is not None else None)
    budgets = await budgets_of(session, scope)
    if not budgets:
        return  # the common case: one query
    refusal = await admit(session, budgets, run_id, month=await _month(session, company_id, now))
    if refusal is not None:
        raise BudgetRefused(refusal)


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
