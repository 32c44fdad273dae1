"""The routine scheduler: due cron slots fired, queued executions started, heartbeats beaten.

Every replica runs one; they share nothing but PostgreSQL. A pass takes the
due routines a batch at a time, their rows locked ``FOR NO KEY UPDATE SKIP
LOCKED`` (so two replicas never hold the same routine, and neither waits for
the other), decides every slot from each one's ``next_slot_at`` to now with
its catch-up policy, claims each one (a unique (routine, slot) row, its issue
and its wake) and moves the cursors past now, all in one transaction of a
fixed number of statements (``paperclip.domain.routines.routine_passes``): a replica
killed anywhere in it leaves the batch's slots due for the next pass of any
replica. Routines due together are so decided together: fifty of one company
are one transaction, not fifty queued on the company's row.

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

from sqlalchemy import Uuid, func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.clock import Clock, speed_of, system_clock
from paperclip.common.actor import SYSTEM
from paperclip.db.availability import log_failure
from paperclip.domain.companies.companies import hold_companies_of
from paperclip.domain.issues.issue_numbers import IssueNumbers
from paperclip.domain.routines.heartbeats import Beat, beat_due
from paperclip.domain.routines.routine_executions import start_next_queued
from paperclip.domain.routines.routine_passes import fire_due, take_due
from paperclip.domain.routines.routines import ROUTINE_LOCK
from paperclip.engine.loop import keep_running
from paperclip.models import Agent, ExecutionStatus, Routine, RoutineExecution

log = logging.getLogger(__name__)

BATCH = 100
"""Routines (or agents) one transaction of a pass takes before it looks again."""
RETRY_SECONDS = 2.0
FIRE_WORKERS = 2
"""Batches of due routines one replica decides at once (each in its own transaction), when
more are due than one batch takes."""
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
        numbers: IssueNumbers,
        *,
        clock: Clock = system_clock,
        grace_seconds: float = 60.0,
        pass_seconds: float = 1.0,
    ) -> None:
        self.sessions = sessions
        self.numbers = numbers
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
        # Routines due together are decided together, a batch in one transaction; when
        # more are due than a batch holds, batches side by side (their commits overlap).
        if await self._fire_batch(now, done, failed) == BATCH:
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
        while await self._fire_batch(now, done, failed):
            pass

    async def _fire_batch(
        self,
        now: datetime,
        done: Pass,
        failed: set[uuid.UUID],
        *,
        limit: int = BATCH,
        only: uuid.UUID | None = None,
    ) -> int:
        """Decide the due slots of up to ``limit`` routines in one transaction; how many it
        took (0: none is due, or all are held).

        A batch that fails is rolled back (its slots are still due) and its routines
        are decided again one per transaction: a routine whose own fails is logged
        and left for the next pass, so it never holds up the others."""
        taken: list[uuid.UUID] = []
        try:
            async with self.sessions.begin() as session:
                routines = await take_due(session, now, limit=limit, skip=failed, only=only)
                if not routines:
                    return 0
                taken = [r.id for r in routines]
                fired = await fire_due(
                    session, SYSTEM, self.numbers, routines, now, grace=self.grace
                )
        except Exception as exc:
            if not taken:
                raise
            if len(taken) > 1:
                for routine_id in taken:
                    await self._fire_batch(now, done, failed, limit=1, only=routine_id)
                return len(taken)
            failed.add(taken[0])
            log_failure(log, "firing routine %s failed", exc, taken[0])
            return 1
        done.executions += fired.executions
        done.missed += fired.missed
        for routine_id, missed, catch_up in fired.late:
            log.info(
                "routine %s: %d late slot(s) not run (catch-up %s)", routine_id, missed, catch_up
            )
        # Routines a batch left for want of room (SLOTS_PER_TRANSACTION) count as a full one.
        return BATCH if fired.left else len(taken)

    async def _start_queued(self, done: Pass) -> None:
        """Start the oldest queued execution of each routine whose open ones closed."""
        async with self.sessions() as session:
            waiting = (
                await session.execute(
                    select(RoutineExecution.routine_id, RoutineExecution.company_id)
                    .where(RoutineExecution.status == ExecutionStatus.QUEUED)
                    .distinct()
                    .limit(BATCH)
                )
            ).all()
        for routine_id, company_id in waiting:
            async with self.sessions.begin() as session:
                await hold_companies_of(session, select(literal(company_id, Uuid)))
                routine = (
                    await session.execute(
                        select(Routine)
                        .where(Routine.id == routine_id)
                        .with_for_update(skip_locked=True, **ROUTINE_LOCK)
                    )
                ).scalar_one_or_none()
                if routine is None:
                    continue  # another replica holds it (or it was deleted)
                started = await start_next_queued(session, SYSTEM, self.numbers, routine)
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
