"""A routine's slots, each decided once: claimed, then started (its issue made, its agent woken),
queued or skipped, in the caller's transaction.

The caller holds the routines' rows (``FOR NO KEY UPDATE``) and its
transaction. The claim is an insert into ``routine_executions``, whose unique
(routine, slot key) lets exactly one transaction ever write a slot's row; a
second one (another replica, a replayed webhook) finds the first's row and
changes nothing. The issue and the wake commit with the claim or not at all:
a process killed between the steps (the named failpoints below) leaves no
trace, and the slot is still due for whichever replica passes next.

Many slots (a call's one, or every slot a scheduler pass finds due) are
decided together in a fixed number of statements, whatever their count: one
claims them all, one reads their budgets, one their routines' open
executions, one writes their issues, one their wakes and one their activity
entries, one their outcomes. The issues' numbers are taken apart
(``IssueNumbers``), so the transaction does not hold the company's row.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, union
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from paperclip.common.activity import activity_row, write_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import each_values, update_each
from paperclip.domain.costs.budget_ledger import (
    BUDGET_EXCEEDED,
    Scope,
    budgets_covering,
    month_of,
    spent,
)
from paperclip.domain.issues.issue_numbers import IssueNumbers
from paperclip.domain.issues.issues import issue_created, new_issue
from paperclip.domain.projects.projects import default_projects
from paperclip.domain.routines.routine_templates import fill, with_payload
from paperclip.domain.runs.wakes import NewIssueWake, queue_wakes_for_new_issues
from paperclip.errors import NotFoundError
from paperclip.failpoints import failpoint
from paperclip.models import (
    Company,
    Concurrency,
    ExecutionStatus,
    Issue,
    IssueStatus,
    Routine,
    RoutineExecution,
)

ENDED = (IssueStatus.DONE, IssueStatus.CANCELLED)
"""An execution whose issue is in one of these (or was deleted) is no longer open."""
MAX_TITLE = 500


@dataclass(frozen=True, slots=True)
class Slot:
    """A due time of a routine, to decide: a cron instant, a webhook delivery, a call."""

    routine: Routine
    key: str
    """``cron:<UTC instant>``, ``webhook:<idempotency key>`` or ``manual:<key>``."""
    at: datetime
    trigger: str
    payload: dict[str, Any] = field(default_factory=dict)


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


ALLOWED = FireCheck(allowed=True)


async def routine_may_fire(
    session: AsyncSession, routine: Routine, *, trigger: str, slot_at: datetime
) -> FireCheck:
    """Whether a slot of ``routine`` may start work now (``slots_may_fire`` for one)."""
    [check] = await slots_may_fire(session, [(routine, slot_at)])
    return check


async def slots_may_fire(
    session: AsyncSession, slots: Sequence[tuple[Routine, datetime]]
) -> list[FireCheck]:
    """Whether each slot (a routine, its time) may start work now: the one place every
    execution asks, for many slots in one read when no budget covers them.

    The company's, agent's and project's budgets (docs/costs.md): a slot whose
    budget is spent for the slot's month is skipped with ``budget_exceeded``,
    under the same row lock as the claim, so it is decided once too.
    """
    scope_of = {r.id: Scope(r.company_id, r.agent_id, r.project_id) for r, _ in slots}
    covering = await budgets_covering(session, set(scope_of.values()))
    if not any(covering.values()):
        return [ALLOWED] * len(slots)
    companies = {r.company_id for r, _ in slots if covering[scope_of[r.id]]}
    found = await session.execute(
        select(Company.id, Company.time_zone).where(Company.id.in_(companies))
    )
    zones = {company_id: zone for company_id, zone in found.all()}
    refused: dict[tuple[Scope, str], bool] = {}
    checks = []
    for routine, slot_at in slots:
        scope = scope_of[routine.id]
        if not covering[scope]:
            checks.append(ALLOWED)
            continue
        month = month_of(slot_at, zones.get(routine.company_id) or "UTC")
        if (scope, month) not in refused:
            refused[scope, month] = await spent(session, covering[scope], month=month) is not None
        checks.append(
            FireCheck(allowed=False, reason=BUDGET_EXCEEDED) if refused[scope, month] else ALLOWED
        )
    return checks


async def execute_slot(
    session: AsyncSession,
    actor: Actor,
    numbers: IssueNumbers,
    routine: Routine,
    *,
    slot_key: str,
    slot_at: datetime,
    trigger: str,
    payload: dict[str, Any] | None = None,
) -> ExecutionOutcome:
    """Claim the slot and decide it: started (issue and wake), queued or skipped."""
    slot = Slot(routine, slot_key, slot_at, trigger, payload or {})
    [execution] = await decide_slots(session, actor, numbers, [slot])
    if execution is not None:
        return ExecutionOutcome(execution, created=True)
    existing = await session.execute(
        select(RoutineExecution).where(
            RoutineExecution.routine_id == routine.id, RoutineExecution.slot_key == slot_key
        )
    )
    return ExecutionOutcome(existing.scalar_one(), created=False)


async def decide_slots(
    session: AsyncSession, actor: Actor, numbers: IssueNumbers, slots: Sequence[Slot]
) -> list[RoutineExecution | None]:
    """Claim each slot and decide it (a routine's slots in time order): started, queued or
    skipped. In ``slots``' order: the execution, or None for a slot decided before (its row
    is the first claim's, unchanged)."""
    if not slots:
        return []
    claimed = await _claim(session, slots)
    if claimed:
        failpoint("routines.slot.claimed.before_issue")
    mine = [(s, claimed[s.routine.id, s.key]) for s in slots if (s.routine.id, s.key) in claimed]
    checks = await slots_may_fire(session, [(s.routine, s.at) for s, _ in mine])
    waiting = await _waiting(
        session,
        {s.routine.id for s, _ in mine if s.routine.concurrency != Concurrency.ALLOW},
        [e.id for _, e in mine],
    )
    decided: dict[uuid.UUID, dict[str, Any]] = {}
    starts: list[tuple[Routine, RoutineExecution]] = []
    for (slot, execution), check in zip(mine, checks, strict=True):
        routine = slot.routine
        if not check.allowed:
            decided[execution.id] = _outcome(ExecutionStatus.SKIPPED, check.reason)
        elif routine.concurrency != Concurrency.ALLOW and routine.id in waiting:
            status = (
                ExecutionStatus.QUEUED
                if routine.concurrency == Concurrency.QUEUE
                else ExecutionStatus.SKIPPED
            )
            decided[execution.id] = _outcome(status, "open_execution")
        else:
            starts.append((routine, execution))
            waiting.add(routine.id)  # its issue is open now: its later slots wait
    activity: list[dict[str, Any]] = []
    decided |= await start_executions(session, actor, numbers, starts, activity)
    activity += [
        activity_row(
            actor,
            f"routine.{decided[execution.id]['status']}",
            entity_type="routine",
            entity_id=slot.routine.id,
            company_id=slot.routine.company_id,
            details={
                "execution_id": str(execution.id),
                "slot_key": slot.key,
                "trigger": slot.trigger,
            },
        )
        for slot, execution in mine
    ]
    await write_activity(session, activity)
    await save_outcomes(session, [e for _, e in mine], decided)
    if starts:
        failpoint("routines.slot.woken.before_commit")
    return [claimed.get((s.routine.id, s.key)) for s in slots]


async def _claim(
    session: AsyncSession, slots: Sequence[Slot]
) -> dict[tuple[uuid.UUID, str], RoutineExecution]:
    """Insert each slot's row, queued until decided; the ones this transaction wrote (a slot
    decided before keeps its row: ``ON CONFLICT DO NOTHING``)."""
    rows = [
        {
            "id": uuid.uuid4(),
            "company_id": s.routine.company_id,
            "routine_id": s.routine.id,
            "slot_key": s.key,
            "slot_at": s.at,
            "trigger": s.trigger,
            "status": ExecutionStatus.QUEUED,  # decided below, in this transaction
            "payload": s.payload,
        }
        for s in slots
    ]
    written = await session.scalars(
        insert(RoutineExecution)
        .on_conflict_do_nothing(index_elements=["routine_id", "slot_key"])
        .returning(RoutineExecution),
        rows,
    )
    return {(e.routine_id, e.slot_key): e for e in written}


async def _waiting(
    session: AsyncSession, routine_ids: set[uuid.UUID], claimed: list[uuid.UUID]
) -> set[uuid.UUID]:
    """The routines whose new slot would overlap an open execution or jump the queue: one
    is open, or one is queued from before (``claimed``: this transaction's own)."""
    if not routine_ids:
        return set()
    open_ = (
        select(RoutineExecution.routine_id)
        .join(Issue, Issue.id == RoutineExecution.issue_id)
        .where(
            RoutineExecution.routine_id.in_(routine_ids),
            RoutineExecution.status == ExecutionStatus.STARTED,
            Issue.status.not_in(ENDED),
        )
    )
    queued = select(RoutineExecution.routine_id).where(
        RoutineExecution.routine_id.in_(routine_ids),
        RoutineExecution.status == ExecutionStatus.QUEUED,
        RoutineExecution.id.not_in(claimed),
    )
    return set((await session.execute(union(open_, queued))).scalars())


OUTCOME = ("status", "reason", "issue_id", "wake_request_id", "started_at")
"""What deciding a slot writes on its execution's row."""


def _outcome(
    status: str,
    reason: str | None = None,
    issue_id: uuid.UUID | None = None,
    wake_request_id: uuid.UUID | None = None,
    started_at: datetime | None = None,
) -> dict[str, Any]:
    return dict(zip(OUTCOME, (status, reason, issue_id, wake_request_id, started_at), strict=True))


async def save_outcomes(
    session: AsyncSession,
    executions: Sequence[RoutineExecution],
    decided: dict[uuid.UUID, dict[str, Any]],
) -> None:
    """Write each execution's outcome (``_outcome``) in one statement, and on its loaded row."""
    if not executions:
        return
    rows = [{"id": e.id, **decided[e.id]} for e in executions]
    written = await session.execute(
        update_each(RoutineExecution, OUTCOME).returning(
            RoutineExecution.id, RoutineExecution.updated_at
        ),
        each_values(rows, OUTCOME),
    )
    updated_at = dict(written.all())
    for execution in executions:
        for name, value in decided[execution.id].items():
            set_committed_value(execution, name, value)
        set_committed_value(execution, "updated_at", updated_at[execution.id])


async def start_executions(
    session: AsyncSession,
    actor: Actor,
    numbers: IssueNumbers,
    starts: Sequence[tuple[Routine, RoutineExecution]],
    activity: list[dict[str, Any]],
) -> dict[uuid.UUID, dict[str, Any]]:
    """Make each execution's issue from its routine's template, assigned to the routine's
    agent, and wake the agent: one statement writes the issues, one the wakes; their
    activity entries are added to ``activity``, for the caller to write. Execution id ->
    its outcome, for ``save_outcomes``."""
    if not starts:
        return {}
    projects = await default_projects(
        session, {r.agent_id for r, _ in starts if r.project_id is None}
    )
    taken = await numbers.take(Counter(r.company_id for r, _ in starts))
    issues = []
    for routine, execution in starts:
        if not taken.get(routine.company_id):
            raise NotFoundError.of("company", routine.company_id)
        issues.append(
            new_issue(
                routine.company_id,
                taken[routine.company_id].pop(0),
                title=_filled(routine.title, routine, execution)[:MAX_TITLE],
                description=with_payload(
                    _filled(routine.description, routine, execution), execution.payload
                ),
                status=IssueStatus.TODO,
                priority=routine.priority,
                assignee_id=routine.agent_id,
                project_id=routine.project_id or projects.get(routine.agent_id),
            )
        )
    # RETURNING makes it one multi-row INSERT; without it, a statement per row.
    await session.execute(insert(Issue).returning(Issue.id), issues)
    failpoint("routines.slot.issue_created.before_wake")
    activity += [issue_created(actor, issue) for issue in issues]
    wakes = await queue_wakes_for_new_issues(
        session,
        actor,
        [
            NewIssueWake(
                company_id=routine.company_id,
                agent_id=routine.agent_id,
                issue_id=issue["id"],
                source="routine",
                reason=f"routine {routine.name}",
                payload={
                    "routine_id": str(routine.id),
                    "execution_id": str(execution.id),
                    "slot_at": execution.slot_at.isoformat(),
                    "trigger": execution.trigger,
                },
            )
            for (routine, execution), issue in zip(starts, issues, strict=True)
        ],
        activity,
    )
    now = datetime.now(UTC)
    return {
        execution.id: _outcome(ExecutionStatus.STARTED, None, issue["id"], wake_id, now)
        for (_, execution), issue, wake_id in zip(starts, issues, wakes, strict=True)
    }


def _filled(text: str, routine: Routine, execution: RoutineExecution) -> str:
    return fill(
        text,
        slot_at=execution.slot_at,
        zone=routine.timezone,
        routine=routine.name,
        trigger=execution.trigger,
    )


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


async def start_next_queued(
    session: AsyncSession, actor: Actor, numbers: IssueNumbers, routine: Routine
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
    activity: list[dict[str, Any]] = []
    if not check.allowed:
        decided = {execution.id: _outcome(ExecutionStatus.SKIPPED, check.reason)}
    else:
        decided = await start_executions(session, actor, numbers, [(routine, execution)], activity)
    activity.append(
        activity_row(
            actor,
            f"routine.{decided[execution.id]['status']}",
            entity_type="routine",
            entity_id=routine.id,
            company_id=routine.company_id,
            details={"execution_id": str(execution.id), "slot_key": execution.slot_key},
        )
    )
    await write_activity(session, activity)
    await save_outcomes(session, [execution], decided)
    if check.allowed:
        failpoint("routines.slot.woken.before_commit")
    return execution
