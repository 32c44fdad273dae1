"""Why a provider turn failed: the machine-readable codes of ``TurnResult.error``.

One vocabulary for every provider: a plugin raises the codes that fit its
CLI (a gateway never spawns, Codex has threads), and an operator reads the
same code for the same failure whichever provider had it.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.StrEnum):
    """Machine-readable prefixes of :attr:`TurnResult.error` (``"<code>: <message>"``)."""

    INVALID_CONFIG = "invalid_config"
    SPAWN_FAILED = "spawn_failed"
    STARTUP_FAILED = "startup_failed"
    CONNECT_FAILED = "connect_failed"
    PROVIDER_EXITED = "provider_exited"
    SESSION_FAILED = "session_failed"
    THREAD_START_FAILED = "thread_start_failed"
    RESUME_FAILED = "resume_failed"
    PROMPT_FAILED = "prompt_failed"
    TURN_START_FAILED = "turn_start_failed"
    TOOLS_UNAVAILABLE = "tools_unavailable"
    AGENT_REFUSED = "agent_refused"
    AGENT_FAILED = "agent_failed"
    TURN_FAILED = "turn_failed"
    TURN_TIMEOUT = "turn_timeout"
    REQUEST_TIMEOUT = "request_timeout"
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
