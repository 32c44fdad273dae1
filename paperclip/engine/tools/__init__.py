"""The core's server-owned tools, by catalog name (``paperclip.wire.tools``).

Imports: context, logs, ownership
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paperclip.engine.tools.base import ToolContext, ToolHandler, ToolOutcome, error
from paperclip.engine.tools.delegate import delegate
from paperclip.engine.tools.interactions import request_human_input
from paperclip.engine.tools.report import block, finish
from paperclip.engine.tools.task import get_task_context, post_comment, progress, report_progress
from paperclip.engine.tools.wake_comments import read_current_wake_comments

HANDLERS: dict[str, ToolHandler] = {
    "get_task_context": get_task_context,
    "read_current_wake_comments": read_current_wake_comments,
    "post_comment": post_comment,
    "report_progress": report_progress,
    "finish": finish,
    "request_human_input": request_human_input,
    "block": block,
    "delegate": delegate,
}

SELF_CONTAINED: dict[str, Callable[[dict[str, Any]], ToolOutcome]] = {"report_progress": progress}
"""Tools whose outcome follows from their arguments alone (no state read, no session), with
at most one log entry: the journal admits, applies and settles such a call in one statement.
Their log entry's replay key is the call's journal id, which that statement assigns."""

__all__ = ["HANDLERS", "SELF_CONTAINED", "ToolContext", "ToolHandler", "ToolOutcome", "error"]
