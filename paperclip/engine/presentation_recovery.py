"""Presentation recovery: an answer whose status decision committed is presented, even after a crash.

The live path presents a run's answer right after its status decision
commits (``endings``). A process that dies between the two leaves a succeeded
run with an answer and no presentation decision; every replica looks for such
runs in the background and presents each through the same ``present`` call
(path ``recovery``), which records the decision once under the run's row
lock: the live path, a replay and two replicas cannot post the answer twice.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import UTC, datetime, timedelta

from paperclip_hookspecs.presentation import PresentationPath
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.db.availability import log_failure
from paperclip.engine.endings import RunEndings
from paperclip.models import Run, RunStatus

log = logging.getLogger(__name__)

BATCH = 100


class PresentationRecovery:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        endings: RunEndings,
        *,
        pass_seconds: float,
        grace: timedelta,
    ) -> None:
        self.sessions, self.endings = sessions, endings
        self.pass_seconds = pass_seconds
        self.grace = grace
        """How long the live path gets before recovery presents in its place."""
        self.presented_total = 0

    async def run(self) -> None:
        while True:
            try:
                await self.pass_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database is away, say: the next pass retries
                log_failure(log, "a presentation recovery pass failed", exc)
            await asyncio.sleep(self.pass_seconds)

    async def pass_once(self) -> int:
        """Present what is due (oldest first, a bounded batch); how many this pass recorded."""
        async with self.sessions() as session:
            due = list(
                await session.scalars(
                    select(Run.id)
                    .where(
                        Run.status == RunStatus.SUCCEEDED,
                        Run.presentation.is_(None),
                        Run.answer.is_not(None),
                        Run.finished_at < datetime.now(UTC) - self.grace,
                    )
                    .order_by(Run.finished_at)
                    .limit(BATCH)
                )
            )
        presented = 0
        for run_id in due:
            if await self.endings.present(uuid.UUID(str(run_id)), PresentationPath.RECOVERY):
                presented += 1
                log.info("presented the answer of run %s after a restart", run_id)
        self.presented_total += presented
        return presented
