"""The end of a run: one terminal status, exactly once, and the issue's status with it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.models import Issue, IssueStatus, Run, RunStatus, RunToken
from paperclip.services.activity import record_activity
from paperclip.services.actor import SYSTEM

# What a finish outcome makes of the issue.
ISSUE_STATUS = {
    "done": IssueStatus.DONE,
    "needs_review": IssueStatus.IN_REVIEW,
    "blocked": IssueStatus.BLOCKED,
}


def decide(run: Run, turn: dict[str, Any]) -> tuple[RunStatus, str | None, str | None]:
    """The terminal status of a run whose turn ended, and the error code/message if it failed."""
    if turn.get("status") != "completed":
        return (
            RunStatus.FAILED,
            str(turn.get("error_code") or "provider_turn_failed"),
            str(turn.get("error") or f"the provider ended the turn as {turn.get('status')}"),
        )
    if run.result is None:
        return (
            RunStatus.FAILED,
            "finish_not_called",
            "the turn ended without a finish or block report",
        )
    return RunStatus.SUCCEEDED, None, None


async def finish_run(
    session: AsyncSession,
    run: Run,
    status: RunStatus,
    *,
    error_code: str | None = None,
    error_message: str | None = None,
    session_ref: str | None = None,
) -> bool:
    """Move the locked ``run`` to ``status``; False when it already was terminal.

    The caller holds the run's row lock under the epoch fence, so this is the
    only transition: a replayed ``turn_finished`` finds a terminal run and does
    nothing.
    """
    if RunStatus(run.status).terminal:
        return False
    run.status = status
    run.phase = "finished"
    run.error_code = error_code
    run.error_message = error_message
    run.finished_at = datetime.now(UTC)
    if session_ref:
        run.session_ref = session_ref
    await session.execute(
        update(RunToken)
        .where(RunToken.run_id == run.id, RunToken.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC))
    )
    if run.issue_id is not None:
        issue = await session.get(Issue, run.issue_id, with_for_update=True)
        if issue is not None:
            if status is RunStatus.SUCCEEDED and run.result:
                issue.status = ISSUE_STATUS.get(run.result.get("outcome", ""), issue.status)
            elif status is not RunStatus.SUCCEEDED and issue.status == IssueStatus.IN_PROGRESS:
                issue.status = IssueStatus.TODO
    record_activity(
        session,
        SYSTEM,
        f"run.{status.value}",
        entity_type="run",
        entity_id=run.id,
        company_id=run.company_id,
        details={"error_code": error_code}
        if error_code
        else {"outcome": (run.result or {}).get("outcome")},
    )
    return True
