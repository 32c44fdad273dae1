"""Close drains: a session closes only when every admitted input has a saved result.

When the provider ends a turn while inputs of the run have no result (a
callback a restart interrupted, one still running), closing the session would
drop what they may still deliver. So the run reports
``native_session_settlement_incomplete`` (the runner keeps the session
suspended, the provider was not drained, and the pending callbacks), the run
fails with ``native_session_cleanup_quarantined`` and its task gets a
system no-replay hold stamped with the closing controller (its instance,
epoch and boot). The ``native_completed_turn_cleanup_hold`` policy settles
that hold once the closing controller is proven gone. All of it happens in
the transaction that holds the run's row lock, where results are saved too:
a result saved before it is seen; after it, the run is already terminal.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.actor import SYSTEM
from paperclip.domain.holds.holds import hold_task
from paperclip.models import Run, TaskHold, ToolCall, ToolCallStatus

SETTLEMENT_INCOMPLETE = "native_session_settlement_incomplete"
CLEANUP_QUARANTINED = "native_session_cleanup_quarantined"
HOLD_SHAPE = "v2"
"""The shape of ``details`` this release saves on a cleanup hold (``v1``: earlier releases)."""


async def pending_callbacks(session: AsyncSession, run_id: uuid.UUID) -> list[dict[str, Any]]:
    """The run's admitted inputs without a saved result (the run's row is locked)."""
    rows = await session.execute(
        select(ToolCall.call_id, ToolCall.tool, ToolCall.admitted_by, ToolCall.admitted_epoch)
        .where(ToolCall.run_id == run_id, ToolCall.status == ToolCallStatus.PENDING)
        .order_by(ToolCall.id)
    )
    return [
        {
            "callId": r.call_id,
            "tool": r.tool,
            "admittedBy": r.admitted_by,
            "epoch": r.admitted_epoch,
        }
        for r in rows
    ]


def settlement_report(pending: list[dict[str, Any]]) -> dict[str, Any]:
    """What close reports when it cannot prove the drain."""
    return {
        "code": SETTLEMENT_INCOMPLETE,
        "runnerSuspended": True,  # the session is not closed on the runner: it stays suspended
        "providerDrained": False,  # callbacks the provider made have no delivered result
        "pendingCallbacks": pending,
    }


async def quarantine(
    session: AsyncSession,
    run: Run,
    report: dict[str, Any],
    *,
    instance: str,
    epoch: int,
    boot: uuid.UUID,
    turn_completed: bool,
) -> TaskHold | None:
    """Hold the run's task with a system no-replay hold, stamped with the closing controller."""
    if run.issue_id is None:
        return None
    return await hold_task(
        session,
        SYSTEM,
        company_id=run.company_id,
        issue_id=run.issue_id,
        kind=CLEANUP_QUARANTINED,
        reason=(
            f"The session could not close: {len(report['pendingCallbacks'])} tool call(s) have "
            "no saved result and may have had their effect. It is kept aside and not replayed; "
            "recovery settles it once the closing control plane is gone."
        ),
        run_id=run.id,
        replay_forbidden=True,
        details={
            "shape": HOLD_SHAPE,
            "closing": {"instance": instance, "epoch": epoch, "boot": str(boot)},
            "turn_completed": turn_completed,
            "files": "saved",  # the runner's work tree was not touched by this hold
            "settlement": report,
        },
    )
