"""The completion guards' question, asked the same way at ``finish`` and after the turn.

One validator, two callers. At the feedback stage (inside the finish tool) a
refusal becomes a correction the model can act on in the same turn; at the
terminal stage (after the provider ended its turn) it fails the run with its
code. Both read the run's wake snapshot and newest read receipt here (one exact
query, then the snapshot's own comments), and the run's view (its comments and
tool calls, two bounded queries), and ask every guard through the plugin
facade, so the two callers can never ask different questions.
"""

from __future__ import annotations

from typing import Any

from paperclip_hookspecs.completion import (
    NATIVE_CURRENT_WAKE_COMMENTS_UNREAD,
    READ_CURRENT_WAKE_COMMENTS,
    CompletionCheck,
    CompletionRefusal,
    CompletionReport,
    CompletionStage,
    ReadReceipt,
    RunBinding,
    WakeSnapshot,
)
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.engine.context.run_view import binding_of, run_view
from paperclip.engine.context.snapshot import run_snapshot, snapshot_entries, state_revision
from paperclip.models import Run, WakeCommentRead
from paperclip.plugin_host import PluginHost

MAX_CORRECTION_CHARS = 1_000
"""A refusal's texts as the model gets them: bounded, whatever a plugin wrote."""
MAX_CODE_CHARS = 100
"""A refusal's code, reason and instruction (a run's ``error_code`` holds at most 100)."""
MAX_CURSOR_CHARS = 200
"""No reader cursor is longer; a longer one cannot continue a read, so none is passed on."""


def receipt_of(read: WakeCommentRead) -> ReadReceipt:
    """A read receipt row as the guards see it: its own binding, never the checked run's."""
    return ReadReceipt(
        binding=RunBinding(
            run_id=str(read.run_id),
            company_id=str(read.company_id),
            issue_id=str(read.issue_id),
            agent_id=str(read.agent_id),
        ),
        snapshot_revision=read.snapshot_revision,
        complete=read.complete,
        cursor=read.next_cursor,
    )


async def current_snapshot(
    session: AsyncSession, run: Run
) -> tuple[WakeSnapshot | None, ReadReceipt | None]:
    """The run's wake snapshot as it is now, and its newest read receipt (None, None without one).

    Raises :class:`~paperclip.engine.context.snapshot.SnapshotBindingError` when the
    snapshot is not the run's company's, task's and agent's.
    """
    found = await run_snapshot(session, run)
    if found is None:
        return None, None
    entries = (
        await snapshot_entries(session, found.snapshot.id) if found.snapshot.comment_count else []
    )
    snapshot = WakeSnapshot(
        revision=state_revision(entries),
        comment_ids=tuple(str(e.comment_id) for e in entries),
        read_required=found.snapshot.read_required,
    )
    receipt = receipt_of(found.latest_read) if found.latest_read is not None else None
    return snapshot, receipt


async def completion_check(
    session: AsyncSession, run: Run, stage: CompletionStage, report: CompletionReport
) -> CompletionCheck:
    """What the guards are shown for ``run``'s report: its binding, its wake snapshot as it is
    now, its newest read receipt, and what the run did (its view).

    Raises :class:`~paperclip.engine.context.snapshot.SnapshotBindingError` when the
    snapshot is not the run's company's, task's and agent's.
    """
    snapshot, receipt = await current_snapshot(session, run)
    return CompletionCheck(
        stage=stage,
        binding=binding_of(run),
        report=report,
        snapshot=snapshot,
        receipt=receipt,
        run=await run_view(session, run, snapshot),
    )


async def check_completion(
    session: AsyncSession,
    run: Run,
    stage: CompletionStage,
    report: CompletionReport,
    plugins: PluginHost,
) -> CompletionRefusal | None:
    """The first guard's refusal of ``run``'s report at ``stage``, or None: accepted.

    The run's row is locked by the caller. Errors other than a refusal (a
    binding mismatch, a failing plugin) propagate.
    """
    return plugins.check_completion(await completion_check(session, run, stage, report))


def report_of(result: dict[str, Any]) -> CompletionReport:
    """The completion report a run's saved result holds."""
    return CompletionReport(
        status=str(result.get("outcome", "")), summary=str(result.get("summary", ""))
    )


def feedback_code(refusal: CompletionRefusal) -> str:
    """The finish tool's error code for a refusal: the unread-comments refusal is answered with
    its correction's name, ``read_current_wake_comments``; other guards keep their own code."""
    if refusal.code == NATIVE_CURRENT_WAKE_COMMENTS_UNREAD:
        return READ_CURRENT_WAKE_COMMENTS
    return refusal.code


def refusal_body(refusal: CompletionRefusal) -> dict[str, Any]:
    """A refusal as the finish tool returns it: the code, and what to do about it now."""
    body: dict[str, Any] = {
        "code": feedback_code(refusal)[:MAX_CODE_CHARS],
        "message": refusal.message[:MAX_CORRECTION_CHARS],
        "reason": refusal.reason[:MAX_CODE_CHARS],
    }
    if refusal.correction is not None:
        cursor = refusal.correction.cursor
        body["correction"] = {
            "instruction": refusal.correction.instruction[:MAX_CODE_CHARS],
            "message": refusal.correction.message[:MAX_CORRECTION_CHARS],
            "cursor": cursor if cursor is None or len(cursor) <= MAX_CURSOR_CHARS else None,
            "restart": refusal.correction.restart,
        }
    return body


def terminal_failure(refusal: CompletionRefusal) -> tuple[str, str]:
    """The error code and message a run fails with when a guard refuses it at the end."""
    return refusal.code[:MAX_CODE_CHARS], refusal.message[:MAX_CORRECTION_CHARS]
