"""A turn's outcome as the runner reads it: Codex's ``turn/completed``, or a failure of ours."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paperclip_hookspecs.providers import (
    PROVIDER_EXITED,
    PROVIDER_SPAWN_FAILED,
    RESUME_FAILED,
    TurnResult,
)
from paperclip_provider_kit.errors import ErrorCode, error_text

# The failures of the process rather than of the model: the control plane resumes them.
_RESUMABLE = {
    ErrorCode.PROVIDER_EXITED: PROVIDER_EXITED,
    ErrorCode.SPAWN_FAILED: PROVIDER_SPAWN_FAILED,
    ErrorCode.STARTUP_FAILED: PROVIDER_SPAWN_FAILED,
    ErrorCode.RESUME_FAILED: RESUME_FAILED,
}


def failed(session_ref: str | None, code: ErrorCode, message: str) -> TurnResult:
    return TurnResult(
        status="failed",
        session_ref=session_ref,
        error=error_text(code, message),
        error_code=_RESUMABLE.get(code),
    )


def turn_result(thread_id: str, payload: Mapping[str, Any], answer: str | None) -> TurnResult:
    """The result of a ``turn/completed`` notification's ``turn``."""
    turn = payload.get("turn")
    status = turn.get("status") if isinstance(turn, Mapping) else None
    if status == "completed":
        return TurnResult(status="completed", session_ref=thread_id, answer=answer)
    if status == "interrupted":
        return TurnResult(status="interrupted", session_ref=thread_id)
    error = turn.get("error") if isinstance(turn, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else None
    info = error.get("codexErrorInfo") if isinstance(error, Mapping) else None
    text = str(message or f"turn ended with status {status!r}")
    if info:
        text += f" ({info})"
    return failed(thread_id, ErrorCode.TURN_FAILED, text)


def describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return str(exc) or type(exc).__name__
