"""A run's provider events wait while a steer is in flight: the acknowledgement goes first.

The provider may record a steered input (Codex: a ``userMessage`` item) before
it answers the steer request. Sent as they come, that item would reach the
run log before the ``steer_result`` it answers, and a reader of the log would
count an already-read steer as unread. So while a steer is in flight the
run's events are held, in order, and sent right after the result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

M = TypeVar("M")
Send = Callable[[M], Awaitable[None]]


class SteerOrder(Generic[M]):
    """One run's outgoing provider events, around its steers."""

    def __init__(self) -> None:
        self._held: list[M] | None = None

    async def emit(self, message: M, send: Send[M]) -> None:
        """Send a provider event now, or after the steer in flight."""
        if self._held is not None:
            self._held.append(message)
            return
        await send(message)

    async def steer(self, steer: Callable[[], Awaitable[M]], send: Send[M]) -> None:
        """Run ``steer`` (which returns its result message); send the result, then what
        the provider emitted meanwhile, in order. Steers of one run come one at a time."""
        self._held = []
        try:
            result = await steer()
            await send(result)
        finally:
            held = self._held
            while held:  # events emitted while these are sent join the same list
                await send(held.pop(0))
            self._held = None
