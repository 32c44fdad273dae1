"""A runner's live connection on this replica: ordered sending from the outbox, acknowledgements.

A run's way: from the outbox (``engine/logs/outbox.py``); next, the runner
process (``paperclip/runner/runtime.py``); what it sends back is read by
``engine/connections/inbox.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Coroutine
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.db.availability import log_failure
from paperclip.engine.links.transport import Transport, TransportClosed
from paperclip.engine.logs import outbox
from paperclip.engine.logs.journal import CallInput
from paperclip.models import Runner
from paperclip.wire.messages import CLOSE_UNAUTHORIZED, Ack, Message, encode

log = logging.getLogger(__name__)

Admitted = tuple[uuid.UUID, int, CallInput | None]
"""An admitted tool call waiting to be executed: run id, journal id, and the call when it
was just admitted (None: read its stored state, which may already hold a result to send)."""

POLL_SECONDS = 1.0
FLUSH_SECONDS = 0.5
REVOCATION_CHECK_TICKS = 4
"""A revoked runner's open connection is closed within this many flush periods."""


class RunnerLink:
    """One connected runner process.

    Sends the outbox in seq order, and keeps two positions that are saved
    lazily (every ``FLUSH_SECONDS`` and when the link closes): how far this
    replica processed the runner's messages, and how far the runner
    acknowledged ours. Losing either to a crash costs replays, which both
    sides deduplicate, never a message.
    """

    def __init__(
        self,
        runner_id: uuid.UUID,
        instance: str,
        transport: Transport,
        providers: set[str],
        sessions: async_sessionmaker[AsyncSession],
        *,
        last_in: int,
        last_sent: int,
        features: frozenset[str] = frozenset(),
        workspace_dir: str = "",
    ) -> None:
        self.runner_id = runner_id
        self.features = features
        """What the runner speaks beyond the base protocol (``hello.features``)."""
        self.workspace_dir = workspace_dir
        """Where it keeps worktrees (``hello.workspace_dir``)."""
        self.instance = instance
        self.transport = transport
        self.providers = providers
        self.sessions = sessions
        self.last_in = last_in
        """The runner's last message this replica processed durably."""
        self.last_sent = last_sent
        self.acked = last_sent
        """The runner acknowledged our messages up to here."""
        self._saved = (last_in, last_sent)
        self._kick = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._order_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self.closed = asyncio.Event()
        self._shut = asyncio.Event()
        self._closing: asyncio.Task[None] | None = None
        self.admitted: asyncio.Queue[Admitted] = asyncio.Queue()
        """Admitted tool calls waiting to be executed."""

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._send_loop(), name=f"runner-send-{self.runner_id}"),
            asyncio.create_task(self._flush_loop(), name=f"runner-flush-{self.runner_id}"),
        ]

    def run_alongside(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """Run a task that lives and dies with this link."""
        self._tasks.append(asyncio.create_task(coro, name=name))

    def kick(self) -> None:
        """New outbox rows were committed for this runner: send them."""
        self._kick.set()

    def processed(self, seq: int) -> None:
        self.last_in = max(self.last_in, seq)

    def runner_acked(self, upto: int) -> None:
        self.acked = max(self.acked, upto)

    async def deliver(self, seq: int, message: Message) -> None:
        """Send a just-committed outbox message now if it is next in order; else let the loop do it."""
        async with self._order_lock:
            if seq == self.last_sent + 1:
                try:
                    await self.send(message)
                except TransportClosed:
                    return  # it stays in the outbox: the runner's next connection gets it
                self.last_sent = seq
                return
        self.kick()

    async def send_unsequenced(self, message: Message) -> None:
        """Send a message kept elsewhere than the outbox (seq 0), if the connection is still up:
        whoever keeps it sends it again on the runner's next connection."""
        with contextlib.suppress(TransportClosed):
            await self.send(message)

    async def send(self, message: Message) -> None:
        await self.send_frame(encode(message))

    async def send_frame(self, frame: str) -> None:
        async with self._send_lock:
            await self.transport.send(frame)

    async def ack(self, upto: int) -> None:
        await self.send(Ack(upto=upto))

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Stop the link's tasks, save its position, close the socket; returns when all that is done."""
        if self.closed.is_set():
            await self._shut.wait()  # closing elsewhere: its position is saved once that ends
            return
        self.closed.set()
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await self.flush()
        with contextlib.suppress(Exception):
            await self.transport.close(code, reason)
        self._shut.set()

    async def flush(self) -> None:
        """Save the resume point and forget the messages the runner acknowledged."""
        position = (self.last_in, self.acked)
        if position == self._saved:
            return
        async with self.sessions.begin() as session:
            await session.execute(
                update(Runner)
                .where(Runner.id == self.runner_id, Runner.instance == self.instance)
                .values(in_seq=self.last_in)
            )
            await outbox.acknowledge(session, self.runner_id, self.acked)
        self._saved = position

    async def _flush_loop(self) -> None:
        ticks = 0
        while not self.closed.is_set():
            await asyncio.sleep(FLUSH_SECONDS)
            ticks += 1
            try:
                await self.flush()
                if ticks % REVOCATION_CHECK_TICKS == 0 and await self._revoked():
                    log.warning("runner %s was revoked; closing its connection", self.runner_id)
                    # From a task of its own: close() cancels and awaits this one.
                    self._closing = asyncio.create_task(
                        self.close(CLOSE_UNAUTHORIZED, "runner credential revoked")
                    )
                    return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log_failure(log, "saving the position of runner %s failed", exc, self.runner_id)

    async def _revoked(self) -> bool:
        async with self.sessions() as session:
            revoked_at = (
                await session.execute(select(Runner.revoked_at).where(Runner.id == self.runner_id))
            ).scalar_one_or_none()
        return revoked_at is not None

    async def _send_loop(self) -> None:
        # Reads committed rows in seq order: the outbox's counter lock makes
        # commit order equal seq order, so nothing is skipped or reordered.
        while not self.closed.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_SECONDS):  # not wait_for: see scheduler.run
                    await self._kick.wait()
            self._kick.clear()
            try:
                async with self.sessions() as session:
                    pending = await outbox.unsent(session, self.runner_id, self.last_sent)
                async with self._order_lock:
                    for message in pending:
                        if message.seq <= self.last_sent:
                            continue  # delivered directly meanwhile
                        await self.send_frame(outbox.as_frame(message))
                        self.last_sent = message.seq
                if pending:
                    self._kick.set()  # there may be more than one page
            except asyncio.CancelledError:
                raise
            except TransportClosed:
                return  # the connection ended: the receive loop closes the link
            except Exception as exc:
                if self.closed.is_set():
                    return
                log_failure(log, "sending to runner %s failed", exc, self.runner_id)
                await asyncio.sleep(POLL_SECONDS)
