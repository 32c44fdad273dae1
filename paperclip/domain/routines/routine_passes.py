"""A scheduler pass's transaction: the due cron slots of many routines, decided together.

``take_due`` locks up to a batch of due routines (``FOR NO KEY UPDATE SKIP
LOCKED``: two replicas never hold the same routine, and neither waits for the
other), after their companies' locks, shared, as every writer of a company's
rows takes them first. ``fire_due`` decides every slot from each routine's
``next_slot_at`` to now with its catch-up policy (``decide_slots``: one
claim, one issue and one wake per slot that starts, in a fixed number of
statements for all of them) and moves each cursor past now, in one more
statement. A replica killed anywhere in it leaves every slot of the batch due
for the next pass of any replica.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.actor import Actor
from paperclip.common.queries import each_values, update_each
from paperclip.domain.companies.companies import hold_companies_of
from paperclip.domain.issues.issue_numbers import IssueNumbers
from paperclip.domain.routines.routine_executions import Slot, decide_slots
from paperclip.domain.routines.routine_schedule import Schedule, SlotPlan
from paperclip.domain.routines.routines import ROUTINE_LOCK
from paperclip.models import Routine, RoutineExecution, Trigger

SLOTS_PER_TRANSACTION = 1_000
"""Slots one transaction decides at most (a catch-up after downtime may find many per
routine); the batch's other routines stay due for the next."""


@dataclass
class Fired:
    """What one transaction of a pass decided."""

    executions: list[RoutineExecution] = field(default_factory=list)
    """The slots claimed (started, queued or skipped), in the order they were decided."""
    missed: int = 0
    late: list[tuple[uuid.UUID, int, str]] = field(default_factory=list)
    """Routines with late slots their catch-up policy did not run: id, how many, the policy."""
    left: int = 0
    """Routines taken but left as they were, still due (``SLOTS_PER_TRANSACTION``)."""


async def take_due(
    session: AsyncSession,
    now: datetime,
    *,
    limit: int,
    skip: Collection[uuid.UUID] = (),
    only: uuid.UUID | None = None,
) -> list[Routine]:
    """Up to ``limit`` due routines (not in ``skip``; ``only`` that one), the oldest due first,
    their rows locked; none another transaction holds."""
    due = [
        Routine.enabled,
        Routine.cron.is_not(None),
        or_(Routine.next_slot_at.is_(None), Routine.next_slot_at <= now),
    ]
    if skip:
        due.append(Routine.id.not_in(skip))
    if only is not None:
        due.append(Routine.id == only)
    # Their companies' locks first: a company's deletion then waits for this transaction
    # (or this one for it, holding nothing), never the other way round mid-way.
    companies = await hold_companies_of(
        session, select(Routine.company_id).where(*due).distinct().limit(limit)
    )
    if not companies:
        return []
    stmt = (
        select(Routine)
        .where(*due, Routine.company_id.in_(companies))
        .order_by(Routine.next_slot_at.nulls_first())
        .limit(limit)
        .with_for_update(skip_locked=True, **ROUTINE_LOCK)
    )
    return list((await session.execute(stmt)).scalars())


async def fire_due(
    session: AsyncSession,
    actor: Actor,
    numbers: IssueNumbers,
    routines: list[Routine],
    now: datetime,
    *,
    grace: timedelta,
) -> Fired:
    """Decide the due slots of ``routines`` (locked by ``take_due``) and move their cursors.

    A routine without a cursor (new, or its schedule changed) gets the first slot
    after ``now``. Once ``SLOTS_PER_TRANSACTION`` slots are planned, the rest of
    the routines are left as they are, still due."""
    fired = Fired()
    slots: list[Slot] = []
    cursors = []
    plans: dict[tuple[Schedule, datetime, str, int], SlotPlan] = {}
    for taken, routine in enumerate(routines):
        assert routine.cron is not None
        schedule = Schedule.of(routine.cron, routine.timezone)
        if routine.next_slot_at is None:
            cursors.append(
                {
                    "id": routine.id,
                    "next_slot_at": schedule.next_after(now),
                    "missed_slots": routine.missed_slots,
                }
            )
            continue
        # Routines of one schedule due together have one plan: it is made once.
        key = (schedule, routine.next_slot_at, routine.catch_up, routine.catch_up_cap)
        if key not in plans:
            plans[key] = schedule.plan(
                routine.next_slot_at,
                now,
                grace=grace,
                catch_up=routine.catch_up,
                cap=routine.catch_up_cap,
            )
        plan = plans[key]
        if slots and len(slots) + len(plan.fire) > SLOTS_PER_TRANSACTION:
            fired.left = len(routines) - taken
            break
        slots += [
            Slot(routine, f"cron:{slot.isoformat()}", slot, Trigger.CRON) for slot in plan.fire
        ]
        cursors.append(
            {
                "id": routine.id,
                "next_slot_at": plan.next_slot_at,
                "missed_slots": routine.missed_slots + plan.missed,
            }
        )
        if plan.missed:
            fired.missed += plan.missed
            fired.late.append((routine.id, plan.missed, routine.catch_up))
    executions = await decide_slots(session, actor, numbers, slots)
    fired.executions = [e for e in executions if e is not None]
    if cursors:
        moved = ("next_slot_at", "missed_slots")
        await session.execute(update_each(Routine, moved), each_values(cursors, moved))
    return fired
