"""The core's server-owned tools, by catalog name (``paperclip.wire.tools``).

Imports: context, logs, ownership
"""

from __future__ import annotations

from paperclip.engine.tools.base import ToolContext, ToolHandler, ToolOutcome, error
from paperclip.engine.tools.interactions import request_human_input
from paperclip.engine.tools.report import block, finish
from paperclip.engine.tools.task import get_task_context, post_comment, report_progress
from paperclip.engine.tools.wake_comments import read_current_wake_comments

HANDLERS: dict[str, ToolHandler] = {
    "get_task_context": get_task_context,
    "read_current_wake_comments": read_current_wake_comments,
    "post_comment": post_comment,
    "report_progress": report_progress,
    "finish": finish,
    "request_human_input": request_human_input,
    "block": block,
}

__all__ = ["HANDLERS", "ToolContext", "ToolHandler", "ToolOutcome", "error"]
