"""A routine's slot, decided once: claimed, its issue made, its agent woken, in one transaction.

The caller holds the routine's row (``FOR NO KEY UPDATE``) and its transaction.
The claim is an insert into ``routine_executions``, whose unique (routine,
slot key) lets exactly one transaction ever write a slot's row; a second one
(another replica, a replayed webhook) finds the first's row and changes
nothing. The issue and the wake commit with the claim or not at all: a
process killed between the steps (the named failpoints below) leaves no trace,
and the slot is still due for whichever replica passes next.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.failpoints import failpoint
from paperclip.models import (
    Agent,
    Company,
    Concurrency,
    ExecutionStatus,
    Issue,
    IssueStatus,
    Routine,
    RoutineExecution,
)
from paperclip.services.activity import record_activity
from paperclip.services.actor import Actor
from paperclip.services.budget_ledger import (
    BUDGET_EXCEEDED,
    Scope,
    budgets_of,
    month_of,
    spent,
)
from paperclip.services.issues import create_issue
from paperclip.services.routine_templates import fill, with_payload
from paperclip.services.wakes import request_wake

ENDED = (IssueStatus.DONE, IssueStatus.CANCELLED)
"""An execution whose issue is in one of these (or was deleted) is no longer open."""
MAX_TITLE = 500


@dataclass(frozen=True, slots=True)
class ExecutionOutcome:
    execution: RoutineExecution
    created: bool
    """False: the slot was decided before (the same cron slot, webhook key or call key)."""


@dataclass(frozen=True, slots=True)
class FireCheck:
    allowed: bool
    reason: str | None = None
    """A machine-readable code when not allowed: the execution is skipped with it."""


async def routine_may_fire(
    session: AsyncSession, routine: Routine, *, trigger: str, slot_at: datetime
) -> FireCheck:
    """Whether a slot of ``routine`` may start work now: the one place every execution asks.

    The company's, agent's and project's budgets (docs/costs.md): a slot whose
    budget is spent for the slot's month is skipped with ``budget_exceeded``,
    under the same row lock as the claim, so it is decided once too.
    """
    budgets = await budgets_of(
        session, Scope(routine.company_id, routine.agent_id, routine.project_id)
    )
    if budgets:
        zone = await session.scalar(
            select(Company.time_zone).where(Company.id == routine.company_id)
        )
        if await spent(session, budgets, month=month_of(slot_at, zone or "UTC")) is not None:
            return FireCheck(allowed=False, reason=BUDGET_EXCEEDED)
    return FireCheck(allowed=True)


async def execute_slot(
    session: AsyncSession,
    actor: Actor,
    routine: Routine,
    *,
    slot_key: str,
    slot_at: datetime,
    trigger: str,
    payload: dict[str, Any] | None = None,
) -> ExecutionOutcome:
    """Claim the slot and decide it: started (issue and wake), queued or skipped."""
    execution = (
        await session.scalars(
            insert(RoutineExecution)
            .values(
                id=uuid.uuid4(),
                company_id=routine.company_id,
                routine_id=routine.id,
                slot_key=slot_key,
                slot_at=slot_at,
                trigger=trigger,
                status=ExecutionStatus.QUEUED,  # decided below, in this transaction
                payload=payload or {},
            )
            .on_conflict_do_nothing(index_elements=["routine_id", "slot_key"])
            .returning(RoutineExecution)
        )
    ).one_or_none()
    if execution is None:
        existing = await session.execute(
            select(RoutineExecution).where(
                RoutineExecution.routine_id == routine.id, RoutineExecution.slot_key == slot_key
            )
        )
        return ExecutionOutcome(existing.scalar_one(), created=False)
    failpoint("routines.slot.claimed.before_issue")
    check = await routine_may_fire(session, routine, trigger=trigger, slot_at=slot_at)
    if not check.allowed:
        execution.status, execution.reason = ExecutionStatus.SKIPPED, check.reason
    elif routine.concurrency != Concurrency.ALLOW and await _waits(session, routine, execution):
        if routine.concurrency == Concurrency.QUEUE:
            execution.reason = "open_execution"
        else:
            execution.status, execution.reason = ExecutionStatus.SKIPPED, "open_execution"
    else:
        await start_execution(session, actor, routine, execution)
    record_activity(
        session,
        actor,
        f"routine.{execution.status}",
        entity_type="routine",
        entity_id=routine.id,
        company_id=routine.company_id,
        details={"execution_id": str(execution.id), "slot_key": slot_key, "trigger": trigger},
    )
    return ExecutionOutcome(execution, created=True)


async def start_execution(
    session: AsyncSession, actor: Actor, routine: Routine, execution: RoutineExecution
) -> None:
    """Make the execution's issue from the template, assigned to the routine's agent, and wake it."""
    agent = await session.get(Agent, routine.agent_id)
    assert agent is not None  # the routine goes with its agent (ON DELETE CASCADE)

    def filled(text: str) -> str:
        return fill(
            text,
            slot_at=execution.slot_at,
            zone=routine.timezone,
            routine=routine.name,
            trigger=execution.trigger,
        )

    issue = await create_issue(
        session,
        actor,
        routine.company_id,
        title=filled(routine.title)[:MAX_TITLE],
        description=with_payload(filled(routine.description), execution.payload),
        status=IssueStatus.TODO,
        priority=routine.priority,
        assignee=agent,
        project_id=routine.project_id,
    )
    failpoint("routines.slot.issue_created.before_wake")
    wake = await request_wake(
        session,
        actor,
        company_id=routine.company_id,
        agent_id=agent.id,
        issue_id=issue.id,
        source="routine",
        reason=f"routine {routine.name}",
        payload={
            "routine_id": str(routine.id),
            "execution_id": str(execution.id),
            "slot_at": execution.slot_at.isoformat(),
            "trigger": execution.trigger,
        },
    )
    execution.status, execution.reason = ExecutionStatus.STARTED, None
    execution.issue_id, execution.wake_request_id = issue.id, wake.wake.id
    execution.started_at = datetime.now(UTC)
    failpoint("routines.slot.woken.before_commit")


async def has_open_execution(session: AsyncSession, routine: Routine) -> bool:
    """Has a started execution of the routine an issue that is not done or cancelled?"""
    stmt = (
        select(RoutineExecution.id)
        .join(Issue, Issue.id == RoutineExecution.issue_id)
        .where(
            RoutineExecution.routine_id == routine.id,
            RoutineExecution.status == ExecutionStatus.STARTED,
            Issue.status.not_in(ENDED),
        )
        .limit(1)
    )
    return (await session.execute(stmt)).first() is not None


async def _waits(session: AsyncSession, routine: Routine, execution: RoutineExecution) -> bool:
    """An open execution, or an earlier one queued: this one would overlap or jump the queue."""
    if await has_open_execution(session, routine):
        return True
    earlier = await session.execute(
        select(RoutineExecution.id)
        .where(
            RoutineExecution.routine_id == routine.id,
            RoutineExecution.status == ExecutionStatus.QUEUED,
            RoutineExecution.id != execution.id,
        )
        .limit(1)
    )
    return earlier.first() is not None


async def start_next_queued(
    session: AsyncSession, actor: Actor, routine: Routine
) -> RoutineExecution | None:
    """The routine's oldest queued execution, started once none is open (its row locked by the
    caller's lock on the routine); None when it still waits or none is queued."""
    if not routine.enabled or await has_open_execution(session, routine):
        return None
    execution = (
        await session.execute(
            select(RoutineExecution)
            .where(
                RoutineExecution.routine_id == routine.id,
                RoutineExecution.status == ExecutionStatus.QUEUED,
            )
            .order_by(RoutineExecution.created_at, RoutineExecution.slot_at)
            .limit(1)
            .with_for_update()
        )
    ).scalar_one_or_none()
    if execution is None:
        return None
    check = await routine_may_fire(
        session, routine, trigger=execution.trigger, slot_at=execution.slot_at
    )
    if not check.allowed:
        execution.status, execution.reason = ExecutionStatus.SKIPPED, check.reason
    else:
        await start_execution(session, actor, routine, execution)
    record_activity(
        session,
        actor,
        f"routine.{execution.status}",
        entity_type="routine",
        entity_id=routine.id,
        company_id=routine.company_id,
        details={"execution_id": str(execution.id), "slot_key": execution.slot_key},
    )
    return execution
