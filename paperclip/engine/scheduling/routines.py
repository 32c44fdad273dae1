"""The routine scheduler: due cron slots fired, queued executions started, heartbeats beaten.

Every replica runs one; they share nothing but PostgreSQL. A pass takes one
due routine at a time, its row locked ``FOR NO KEY UPDATE SKIP LOCKED`` (so
two replicas never hold the same routine, and neither waits for the other),
decides every slot from ``next_slot_at`` to now with the routine's catch-up
policy, claims each one (``execute_slot``: a unique (routine, slot) row, its
issue and its wake) and moves ``next_slot_at`` past now, all in one
transaction: a replica killed anywhere in it leaves the slots due for the
next pass of any replica.

Time is an input: the scheduler reads only ``clock``, so tests move simulated
hours by moving it. It sleeps until the next due slot or heartbeat (at most
``pass_seconds``, which also bounds how soon a queued execution starts after
the open one closed).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.clock import Clock, speed_of, system_clock
from paperclip.db.availability import log_failure
from paperclip.engine.loop import keep_running
from paperclip.models import Agent, ExecutionStatus, Routine, RoutineExecution, Trigger
from paperclip.services.actor import SYSTEM
from paperclip.services.heartbeats import Beat, beat_due
from paperclip.services.routine_executions import execute_slot, start_next_queued
from paperclip.services.routine_schedule import Schedule
from paperclip.services.routines import ROUTINE_LOCK

log = logging.getLogger(__name__)

BATCH = 100
"""Routines (or agents) one pass takes before it looks again from the start."""
RETRY_SECONDS = 2.0
FIRE_WORKERS = 4
"""Due routines one replica decides at once (each in its own transaction)."""
MIN_WAIT_SECONDS = 0.02
DUE_MARGIN_SECONDS = 0.002
"""A due routine another replica holds is looked at again this soon, not in a busy loop."""


@dataclass
class Pass:
    """What one pass did."""

    executions: list[RoutineExecution] = field(default_factory=list)
    """Cron slots claimed (started, queued or skipped), in the order they were decided."""
    missed: int = 0
    started_from_queue: list[RoutineExecution] = field(default_factory=list)
    beats: list[Beat] = field(default_factory=list)


class RoutineScheduler:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        clock: Clock = system_clock,
        grace_seconds: float = 60.0,
        pass_seconds: float = 1.0,
    ) -> None:
        self.sessions = sessions
        self.clock = clock
        self.grace = timedelta(seconds=grace_seconds)
        self.pass_seconds = pass_seconds

    async def run(self) -> None:
        """Pass, then sleep until something is due (at most ``pass_seconds``); until cancelled."""
        await keep_running(
            self.tick,
            every=self.pass_seconds,
            until_next=self._until_due,
            retry=RETRY_SECONDS,
            log=log,
            failure="the routine scheduler's pass failed",
        )

    async def tick(self) -> Pass:
        """One pass at the clock's now."""
        now = self.clock()
        done, failed = Pass(), set[uuid.UUID]()
        # Routines due together are decided side by side: their commits overlap.
        await asyncio.gather(*(self._fire_due(now, done, failed) for _ in range(FIRE_WORKERS)))
        await self._start_queued(done)
        while True:
            async with self.sessions.begin() as session:
                beats = await beat_due(session, now, BATCH)
            done.beats += beats
            if len(beats) < BATCH:
                break
        return done

    async def _fire_due(self, now: datetime, done: Pass, failed: set[uuid.UUID]) -> None:
        while await self._fire_one(now, done, failed):
            pass

    async def _fire_one(self, now: datetime, done: Pass, failed: set[uuid.UUID]) -> bool:
        """Decide the due slots of one routine; False when none is due (or all are held).

        A routine whose pass fails is logged and left for the next pass (its transaction
        rolled back, its slots are still due), so it never holds up the others."""
        taken: list[uuid.UUID] = []
        try:
            async with self.sessions.begin() as session:
                stmt = (
                    select(Routine)
                    .where(
                        Routine.enabled,
                        Routine.cron.is_not(None),
                        or_(Routine.next_slot_at.is_(None), Routine.next_slot_at <= now),
                    )
                    .order_by(Routine.next_slot_at.nulls_first())
                    .limit(1)
                    .with_for_update(skip_locked=True, **ROUTINE_LOCK)
                )
                if failed:
                    stmt = stmt.where(Routine.id.not_in(failed))
                routine = (await session.execute(stmt)).scalar_one_or_none()
                if routine is None:
                    return False
                taken.append(routine.id)
                await self._decide(session, routine, now, done)
        except Exception as exc:
            if not taken:
                raise
            failed.add(taken[0])
            log_failure(log, "firing routine %s failed", exc, taken[0])
        return True

    async def _decide(
        self, session: AsyncSession, routine: Routine, now: datetime, done: Pass
    ) -> None:
        assert routine.cron is not None
        schedule = Schedule.of(routine.cron, routine.timezone)
        if routine.next_slot_at is None:
            routine.next_slot_at = schedule.next_after(now)  # a new or changed schedule
            return
        plan = schedule.plan(
            routine.next_slot_at,
            now,
            grace=self.grace,
            catch_up=routine.catch_up,
            cap=routine.catch_up_cap,
        )
        for slot in plan.fire:
            outcome = await execute_slot(
                session,
                SYSTEM,
                routine,
                slot_key=f"cron:{slot.isoformat()}",
                slot_at=slot,
                trigger=Trigger.CRON,
            )
            done.executions.append(outcome.execution)
        routine.missed_slots += plan.missed
        routine.next_slot_at = plan.next_slot_at
        done.missed += plan.missed
        if plan.missed:
            log.info(
                "routine %s: %d late slot(s) not run (catch-up %s)",
                routine.id,
                plan.missed,
                routine.catch_up,
            )

    async def _start_queued(self, done: Pass) -> None:
        """Start the oldest queued execution of each routine whose open ones closed."""
        async with self.sessions() as session:
            waiting = list(
                (
                    await session.execute(
                        select(RoutineExecution.routine_id)
                        .where(RoutineExecution.status == ExecutionStatus.QUEUED)
                        .distinct()
                        .limit(BATCH)
                    )
                ).scalars()
            )
        for routine_id in waiting:
            async with self.sessions.begin() as session:
                routine = (
                    await session.execute(
                        select(Routine)
                        .where(Routine.id == routine_id)
                        .with_for_update(skip_locked=True, **ROUTINE_LOCK)
                    )
                ).scalar_one_or_none()
                if routine is None:
                    continue  # another replica holds it (or it was deleted)
                started = await start_next_queued(session, SYSTEM, routine)
                if started is not None:
                    done.started_from_queue.append(started)

    async def _until_due(self) -> float:
        """Real seconds until the next slot or heartbeat is due, at most ``pass_seconds``."""
        async with self.sessions() as session:
            slot = (
                await session.execute(
                    select(func.min(Routine.next_slot_at)).where(
                        Routine.enabled, Routine.cron.is_not(None)
                    )
                )
            ).scalar()
            beat = (
                await session.execute(
                    select(func.min(Agent.heartbeat_due_at)).where(
                        Agent.heartbeat_seconds.is_not(None)
                    )
                )
            ).scalar()
        due = [d for d in (slot, beat) if d is not None]
        if not due:
            return self.pass_seconds
        ahead = (min(due) - self.clock()).total_seconds() / speed_of(self.clock)
        # Just past the due instant: a timer that fires a hair early would find nothing due.
        return max(MIN_WAIT_SECONDS, min(self.pass_seconds, ahead + DUE_MARGIN_SECONDS))
