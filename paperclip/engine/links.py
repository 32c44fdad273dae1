"""A runner's live WebSocket on this replica: ordered sending from the outbox, acknowledgements."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

from litestar import WebSocket
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.engine import outbox
from paperclip.runner import protocol

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0


class RunnerLink:
    """One connected runner process. Sends the outbox in seq order; tracks what it processed."""

    def __init__(
        self,
        runner_id: uuid.UUID,
        instance: str,
        socket: WebSocket[Any, Any, Any],
        providers: set[str],
        sessions: async_sessionmaker[AsyncSession],
        *,
        last_in: int,
        last_sent: int,
    ) -> None:
        self.runner_id = runner_id
        self.instance = instance
        self.socket = socket
        self.providers = providers
        self.sessions = sessions
        self.last_in = last_in
        """The runner's last message this replica processed durably."""
        self.last_sent = last_sent
        self._kick = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._sender: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()

    def start(self) -> None:
        self._sender = asyncio.create_task(self._send_loop(), name=f"runner-send-{self.runner_id}")

    def kick(self) -> None:
        """New outbox rows were committed for this runner: send them."""
        self._kick.set()

    async def send(self, message: dict[str, Any]) -> None:
        async with self._send_lock:
            await self.socket.send_text(protocol.encode(message))

    async def ack(self, upto: int) -> None:
        await self.send({"type": protocol.ACK, "upto": upto})

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self.closed.set()
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sender
        with contextlib.suppress(Exception):
            await self.socket.close(code=code, reason=reason)

    async def _send_loop(self) -> None:
        # Reads committed rows in seq order: the outbox's counter lock makes
        # commit order equal seq order, so nothing is skipped or reordered.
        while not self.closed.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kick.wait(), POLL_SECONDS)
            self._kick.clear()
            try:
                async with self.sessions() as session:
                    pending = await outbox.unsent(session, self.runner_id, self.last_sent)
                for message in pending:
                    await self.send(outbox.as_wire(message))
                    self.last_sent = message.seq
                if pending:
                    self._kick.set()  # there may be more than one page
            except asyncio.CancelledError:
                raise
            except Exception:
                if self.closed.is_set():
                    return
                log.exception("sending to runner %s failed", self.runner_id)
                await asyncio.sleep(POLL_SECONDS)
