"""A transaction over a batch's runs, locked and fenced first: plain statements, the ORM on demand.

A batch of tool calls executes and settles in one such transaction, and a
batch of provider events is appended in one. Their own statements (the runs'
lock and fence, the receipts, the log entries, the settlement) are plain
SQL; a session, joined to the same transaction, is opened only when a tool
wants one. Most calls of a busy run report progress, which needs none, and a
session's own work (its begin, identity map, flush and commit) costs several
times what those statements do.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession, async_sessionmaker
from sqlalchemy.orm import defer
from sqlalchemy.orm.attributes import set_committed_value

from paperclip.db.driver import engine_of
from paperclip.engine.ownership.fence import LockedRun, StaleEpochError, lock_fenced
from paperclip.models import Run


class FencedTransaction:
    """The runs of a batch, locked and fenced, and the transaction that writes for them."""

    def __init__(
        self,
        connection: AsyncConnection,
        driver: asyncpg.Connection,
        sessions: async_sessionmaker[AsyncSession],
        locked: dict[uuid.UUID, LockedRun],
        refused: dict[uuid.UUID, StaleEpochError],
    ) -> None:
        self.connection = connection
        self.driver = driver
        """The asyncpg connection, in the transaction: for the plain statements."""
        self.locked = locked
        """The runs that passed the fence, locked until the transaction ends."""
        self.refused = refused
        self._sessions = sessions
        self._session: AsyncSession | None = None
        self._runs: dict[uuid.UUID, Run] = {}

    @classmethod
    @asynccontextmanager
    async def begin(
        cls,
        sessions: async_sessionmaker[AsyncSession],
        epochs: Mapping[uuid.UUID, int],
        *,
        instance: str,
    ) -> AsyncIterator[FencedTransaction]:
        """Lock and fence the runs (``epochs``: each run's expected epoch), then the block
        writes; commits when the block ends, rolls back when it raises."""
        async with engine_of(sessions).connect() as connection, connection.begin():
            # The lock goes through SQLAlchemy first: it begins the transaction
            # that the plain statements on the driver connection then join.
            locked, refused = await lock_fenced(connection, dict(epochs), instance=instance)
            raw = await connection.get_raw_connection()
            tx = cls(connection, raw.driver_connection, sessions, locked, refused)
            try:
                yield tx
                if tx._session is not None:
                    await tx._session.flush()
            finally:
                if tx._session is not None:
                    await tx._session.close()  # leaves the transaction to the block above

    def session(self) -> AsyncSession:
        """An ORM session in this transaction (opened on first use); it never commits it."""
        if self._session is None:
            # rollback_only: the session's commit does not end the transaction,
            # its rollback does (a failed flush must not let the batch commit).
            self._session = self._sessions(
                bind=self.connection, join_transaction_mode="rollback_only"
            )
        return self._session

    async def run(self, run_id: uuid.UUID) -> Run:
        """A locked run's row as an ORM object, for a tool that reads or changes more of it."""
        run = self._runs.get(run_id)
        if run is None:
            if run_id not in self.locked:
                raise KeyError(f"run {run_id} is not locked by this transaction")
            run = await self.session().get_one(
                Run,
                run_id,
                # Already locked by this transaction; the execution input is the whole
                # prompt, loaded only by the tool that reads it.
                options=[defer(Run.execution_input)],
                populate_existing=True,
            )
            self._runs[run_id] = run
        return run

    def appended(self, counts: Mapping[uuid.UUID, int]) -> None:
        """Events were appended to these runs' logs by a plain statement: the counters the
        ORM holds move with them, so a flush neither writes nor reads stale ones."""
        for run_id, added in counts.items():
            run = self._runs.get(run_id)
            if run is not None:
                set_committed_value(run, "last_event_seq", run.last_event_seq + added)
