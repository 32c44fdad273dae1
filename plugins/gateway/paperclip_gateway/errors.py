"""Why a gateway turn failed: the machine-readable codes of ``TurnResult.error``."""

from __future__ import annotations

import enum


class ErrorCode(enum.StrEnum):
    """Machine-readable prefixes of :attr:`TurnResult.error` (``"<code>: <message>"``)."""

    INVALID_CONFIG = "invalid_config"
    CONNECT_FAILED = "connect_failed"
    TOOLS_UNAVAILABLE = "tools_unavailable"
    AGENT_REFUSED = "agent_refused"
    AGENT_FAILED = "agent_failed"
    TURN_TIMEOUT = "turn_timeout"
    TURN_IN_PROGRESS = "turn_in_progress"
    DRIVER_CLOSED = "driver_closed"


def error_text(code: ErrorCode, message: str) -> str:
    """Format a turn error as ``"<code>: <message>"``."""
    return f"{code.value}: {message}"


class TurnAborted(Exception):
    """Ends a turn early with a failed result."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
