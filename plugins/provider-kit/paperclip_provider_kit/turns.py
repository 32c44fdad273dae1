"""What every driver's ``run_turn`` shares: one turn at a time, none after close, and an
aborted turn answered as a failed :class:`TurnResult` with its code."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from paperclip_hookspecs.providers import TurnResult

from paperclip_provider_kit.errors import ErrorCode, TurnAborted, error_text


def failed(session_ref: str | None, code: ErrorCode, message: str) -> TurnResult:
    """A failed turn, its error ``"<code>: <message>"``."""
    return TurnResult(status="failed", session_ref=session_ref, error=error_text(code, message))


class TurnGate:
    """A driver's turn state: whether a turn runs now, and whether the driver is closed."""

    def __init__(self) -> None:
        self.running = False
        self.closed = False

    async def run(
        self,
        session_ref: str | None,
        turn: Callable[[], Awaitable[TurnResult]],
        session_now: Callable[[], str | None],
    ) -> TurnResult:
        """Run ``turn`` unless the driver is closed or busy (a failed result says which).

        A :class:`TurnAborted` becomes a failed result for the session ``session_now()``
        names (the one the turn reached), else ``session_ref``.
        """
        if self.closed:
            return failed(session_ref, ErrorCode.DRIVER_CLOSED, "the driver is closed")
        if self.running:
            return failed(session_ref, ErrorCode.TURN_IN_PROGRESS, "a turn is running")
        self.running = True
        try:
            return await turn()
        except TurnAborted as exc:
            return failed(session_now() or session_ref, exc.code, exc.message)
        finally:
            self.running = False
