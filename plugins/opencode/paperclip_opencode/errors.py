"""Why an OpenCode turn failed: the machine-readable codes of ``TurnResult.error``."""

from __future__ import annotations

import enum


class ErrorCode(enum.StrEnum):
    """Machine-readable prefixes of :attr:`TurnResult.error` (``"<code>: <message>"``)."""

    INVALID_CONFIG = "invalid_config"
    SPAWN_FAILED = "spawn_failed"
    STARTUP_FAILED = "startup_failed"
    PROVIDER_EXITED = "provider_exited"
    SESSION_FAILED = "session_failed"
    RESUME_FAILED = "resume_failed"
    PROMPT_FAILED = "prompt_failed"
    TURN_FAILED = "turn_failed"
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
