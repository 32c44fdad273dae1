"""The runner's outbox: its data messages, numbered, kept until the control plane acknowledges them."""

from __future__ import annotations

import asyncio
from collections import OrderedDict

import msgspec

from paperclip.wire import messages as wire

LIMIT = 50_000
"""Messages kept while no control plane answers; past it, new ones wait (back-pressure)."""


class Outbox:
    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._seq = 0
        self._kept: OrderedDict[int, wire.DataMessage] = OrderedDict()
        self._room = asyncio.Event()
        self._room.set()

    async def number(self, message: wire.DataMessage) -> wire.DataMessage:
        """``message`` with the next seq, kept until acknowledged (waits while the outbox is full)."""
        while len(self._kept) >= self.limit:
            self._room.clear()
            await self._room.wait()
        self._seq += 1
        numbered = msgspec.structs.replace(message, seq=self._seq)
        self._kept[self._seq] = numbered
        return numbered

    def acknowledged(self, upto: int) -> None:
        """The control plane processed every message up to ``upto`` durably: forget them."""
        while self._kept and next(iter(self._kept)) <= upto:
            self._kept.popitem(last=False)
        if len(self._kept) < self.limit:
            self._room.set()

    def after(self, seq: int) -> list[wire.DataMessage]:
        """The messages kept above ``seq``, in order: what a reconnect replays."""
        return [message for kept, message in self._kept.items() if kept > seq]
