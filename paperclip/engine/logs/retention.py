"""History past its retention, removed in small batches that never hold up the engine.

Three kinds of history grow with every run and are read by people only once
they are old: a run's events (``run_events``), its tool journal
(``tool_calls``) and the activity log (``activity_log``). Each has its own
retention (``PAPERCLIP_RETENTION_*_DAYS``; 0 keeps it for ever). Runners
remove a finished run's folder on their own (``PAPERCLIP_RUNNER_RUN_RETENTION_HOURS``).

What recovery and the seeds still read is never removed:

- anything of a run that is not terminal (queued or running: its log, its
  journal, its steers' evidence), whatever its age;
- anything of a run whose answer is not presented yet (presentation recovery);
- a journaled call still ``pending`` (its recovery policy settles it);
- receipts of commands the model named (``tool_receipts``), which keep a replayed
  write from happening twice (a call's receipt under its own command id is its
  journal row: it goes with it, once its run has ended and no call of it can come);
- the runs themselves, their turns, comments, wakes and everything else.

A row goes only once both it and its run's end are past the retention.

Each batch is one short transaction of at most ``batch_rows`` rows, taken
from the oldest in id order (the primary key: no scan of what stays), with a
lock timeout, so a batch never waits on the engine's locks and the engine
never waits on more than one batch. Replicas take turns through an advisory
lock a pass holds: a replica whose peer's pass is under way skips its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession, async_sessionmaker

from paperclip.db.availability import log_failure
from paperclip.db.driver import engine_of
from paperclip.metrics import RETENTION_DELETED

log = logging.getLogger(__name__)

RETENTION_LOCK = (0x5043_0003, 1)
"""The advisory lock a replica's pass holds from its start to its end."""
LOCK_KEYS = {"cls": RETENTION_LOCK[0], "key": RETENTION_LOCK[1]}
PASS_LOCK = text("SELECT pg_try_advisory_lock(:cls, :key)")
PASS_UNLOCK = text("SELECT pg_advisory_unlock(:cls, :key)")

# A run whose history may go: ended before the cutoff, its answer presented (or none).
_RUN_DONE = """
    EXISTS (
        SELECT 1 FROM runs r WHERE r.id = w.run_id
        AND r.status IN ('succeeded', 'failed', 'cancelled')
        AND r.finished_at < :cutoff
        AND NOT (r.status = 'succeeded' AND r.presentation IS NULL AND r.answer IS NOT NULL)
    )
"""
_RUN_NOT_LIVE = """
    (w.run_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM runs r WHERE r.id = w.run_id AND r.status IN ('queued', 'running')
    ))
"""


def _batch(table: str, columns: str, keep: str) -> str:
    """One batch of ``table``: the next window of rows in id order, and of them, those that go.

    Returns how many went, where the window ended, and whether the whole window
    is inside the retention (then the pass is over: ids grow with time).
    """
    return f"""
        WITH w AS (
            SELECT id, created_at, {columns} FROM {table}
            WHERE id > :after ORDER BY id LIMIT :rows
        ), gone AS (
            DELETE FROM {table} t USING w
            WHERE t.id = w.id AND w.created_at < :cutoff AND {keep}
            RETURNING t.id
        )
        SELECT (SELECT count(*) FROM gone), (SELECT max(id) FROM w),
               (SELECT coalesce(bool_and(created_at >= :cutoff), false) FROM w)
    """


BATCHES = {
    "run_events": _batch("run_events", "run_id", _RUN_DONE),
    "tool_calls": _batch("tool_calls", "run_id, status", f"w.status <> 'pending' AND {_RUN_DONE}"),
    "activity_log": _batch("activity_log", "run_id", _RUN_NOT_LIVE),
}


@dataclass
class RetentionReport:
    """What the last pass did (for tests, the bench and the log)."""

    deleted: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    longest_batch_seconds: float = 0.0
    skipped: bool = False
    """Another replica's pass held the lock."""


class RetentionKeeper:
    """The loop that removes history past its retention, in batches; any replica may run it."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        retention_days: dict[str, float],
        pass_seconds: float,
        batch_rows: int = 1000,
        pause_seconds: float = 0.01,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        unknown = set(retention_days) - set(BATCHES)
        if unknown:
            raise ValueError(f"no retention for {sorted(unknown)}")
        self.sessions = sessions
        self.retention_days = retention_days
        self.pass_seconds = pass_seconds
        self.batch_rows = batch_rows
        self.pause_seconds = pause_seconds
        self.clock = clock
        self.last = RetentionReport()

    async def run(self) -> None:
        """A pass every ``pass_seconds`` until cancelled; a failed pass is logged and retried."""
        if not any(days > 0 for days in self.retention_days.values()):
            return  # everything is kept for ever
        while True:
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log_failure(log, "removing history past its retention failed", exc)
            await asyncio.sleep(self.pass_seconds)

    async def sweep(self) -> RetentionReport:
        """One pass over every kind of history, to the end of what is past its retention;
        skipped while another replica's pass runs."""
        report = RetentionReport()
        now = self.clock()
        async with engine_of(self.sessions).connect() as conn:
            # A session lock, on the one connection the pass uses: a replica killed mid-pass
            # loses its connection, and with it the lock.
            held = await conn.scalar(PASS_LOCK, LOCK_KEYS)
            await conn.commit()
            if not held:
                report.skipped = True
                self.last = report
                return report
            try:
                for table, days in self.retention_days.items():
                    if days > 0:
                        cutoff = now - timedelta(days=days)
                        report.deleted[table] = await self._sweep_table(conn, table, cutoff, report)
            finally:
                await conn.rollback()
                await conn.scalar(PASS_UNLOCK, LOCK_KEYS)
                await conn.commit()
        self.last = report
        if any(report.deleted.values()):
            log.info(
                "removed history past its retention: %s",
                ", ".join(f"{n} {table} rows" for table, n in report.deleted.items() if n),
            )
        return report

    async def _sweep_table(
        self, conn: AsyncConnection, table: str, cutoff: datetime, report: RetentionReport
    ) -> int:
        after, deleted = 0, 0
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            async with conn.begin():
                # A batch never waits long for a row the engine holds: it fails, and the next
                # pass takes the row.
                await conn.execute(text("SET LOCAL lock_timeout = '2s'"))
                gone, last, reached = (
                    await conn.execute(
                        text(BATCHES[table]),
                        {"after": after, "rows": self.batch_rows, "cutoff": cutoff},
                    )
                ).one()
            report.batches += 1
            report.longest_batch_seconds = max(report.longest_batch_seconds, loop.time() - started)
            if gone:
                deleted += gone
                RETENTION_DELETED.labels(table).inc(gone)
            if last is None or reached:
                return int(deleted)
            after = last
            await asyncio.sleep(self.pause_seconds)
