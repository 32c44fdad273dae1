"""Built-in completion guard: a truncated wake's comments must all be read, by this run, on this snapshot."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.completion import (
    NATIVE_CURRENT_WAKE_COMMENTS_UNREAD,
    READ_CURRENT_WAKE_COMMENTS,
    CompletionCheck,
    CompletionCorrection,
    CompletionRefusal,
)

BLOCKED = "blocked"
"""The report of the ``block`` tool (the terminal stage sees it too)."""


@hookimpl(trylast=True)
def paperclip_check_completion(check: CompletionCheck) -> CompletionRefusal | None:
    """Refuse an unread, partial, foreign or stale read with the correction that fixes it."""
    snapshot, receipt = check.snapshot, check.receipt
    if snapshot is None or not snapshot.read_required:
        return None
    if check.report.status == BLOCKED:
        return None  # a run that asks for help reports no completion: nothing to guard
    if receipt is None:
        return _refuse("unread", "Read the current wake comments before reporting completion.")
    if receipt.binding != check.binding:
        # Another run's, agent's, company's or task's reading proves nothing for this one.
        return _refuse(
            "foreign", "Read this run's current wake comments before reporting completion."
        )
    if receipt.snapshot_revision != snapshot.revision:
        return _refuse(
            "changed_snapshot",
            "The wake comments changed while you read them; read them again from the first page.",
            restart=True,
        )
    if not receipt.complete:
        return _refuse(
            "partial",
            "You have not read every page of the current wake comments; continue from your cursor.",
            cursor=receipt.cursor,
        )
    return None


def _refuse(
    reason: str, message: str, *, cursor: str | None = None, restart: bool = False
) -> CompletionRefusal:
    return CompletionRefusal(
        code=NATIVE_CURRENT_WAKE_COMMENTS_UNREAD,
        reason=reason,
        message=message,
        correction=CompletionCorrection(
            instruction=READ_CURRENT_WAKE_COMMENTS, message=message, cursor=cursor, restart=restart
        ),
    )
