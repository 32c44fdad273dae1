"""Cleanup holds of completed turns: what the ``native_completed_turn_cleanup_hold`` policy reads and writes.

A run that failed with ``native_session_cleanup_quarantined`` after its turn
completed left its task with system no-replay holds: the cleanup-quarantine
hold its closing controller set (``drain``), and sometimes a continuation
hold of the same run. Once that controller is provably gone (its in-process
cleanup gate went with it), each such hold settles as ``restored``: its
replay block is lifted and ``issue.recovery_action_resolved`` is logged, in
one transaction with the settlement's record, once. It starts no run and
leaves the task's status alone; a wake its task got while held (its own wait
ended) is claimable from then on, and the schedulers are told so at once. A hold that protects files not verified as
saved is left to workspace recovery; an operator's hold is never listed.

Two shapes of ``details`` are read: ``v2`` (``drain.quarantine``) and ``v1``,
as earlier releases saved them (``preserve_without_replay_v1``, the closing
controller's ``closingInstance``/``closingEpoch``, and a
``completedWorkspaceRecoveryCondition`` saying whether the files were saved).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from paperclip_hookspecs.recovery import CleanupHold, OwnerProof, OwnerRef
from sqlalchemy import and_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.activity import record_activity
from paperclip.common.actor import SYSTEM
from paperclip.domain.runs.wakes import notify_wakes
from paperclip.engine.endings.drain import CLEANUP_QUARANTINED, HOLD_SHAPE
from paperclip.engine.logs import outbox
from paperclip.engine.ownership.fence import RUN_LOCK
from paperclip.engine.recovery.boots import prove_boot_gone
from paperclip.models import (
    HoldSetter,
    HoldStatus,
    RecoverySettlement,
    Run,
    RunStatus,
    RunTurn,
    TaskHold,
    TurnStatus,
)
from paperclip.wire.messages import Close

KIND = "native_completed_turn_cleanup_hold"
RESOLVED_ACTION = "issue.recovery_action_resolved"

LISTED = (
    select(TaskHold, Run.runner_id)
    .join(Run, Run.id == TaskHold.run_id)
    .join(RunTurn, and_(RunTurn.run_id == Run.id, RunTurn.number == Run.turn))
    .where(
        TaskHold.status == HoldStatus.ACTIVE,
        TaskHold.replay_forbidden.is_(True),
        TaskHold.set_by == HoldSetter.SYSTEM,
        Run.status == RunStatus.FAILED,
        Run.error_code == CLEANUP_QUARANTINED,
        RunTurn.status == TurnStatus.COMPLETED,  # a run whose turn did not complete: never
    )
    .order_by(TaskHold.created_at)
)


def shape_of(details: dict[str, Any]) -> str:
    return HOLD_SHAPE if details.get("shape") == HOLD_SHAPE else "v1"


def _closing(details: dict[str, Any]) -> tuple[OwnerRef | None, str | None]:
    if shape_of(details) == HOLD_SHAPE:
        closing = details.get("closing") or {}
        return OwnerRef(str(closing.get("instance")), int(closing.get("epoch", 0))), closing.get(
            "boot"
        )
    if details.get("closingInstance"):
        return OwnerRef(str(details["closingInstance"]), int(details.get("closingEpoch", 0))), None
    return None, None


def protects_unsaved_files(details: dict[str, Any]) -> bool:
    if shape_of(details) == HOLD_SHAPE:
        return details.get("files") == "unsaved"
    condition = details.get("completedWorkspaceRecoveryCondition")
    return isinstance(condition, dict) and condition.get("filesSaved") is not True


async def list_holds(session: AsyncSession, limit: int) -> list[CleanupHold]:
    rows = (await session.execute(LISTED.limit(limit))).all()
    found = []
    for hold, _ in rows:
        closing, _boot = _closing(hold.details or {})
        found.append(
            CleanupHold(
                hold_id=str(hold.id),
                company_id=str(hold.company_id),
                issue_id=str(hold.issue_id),
                run_id=str(hold.run_id),
                closing=closing,
                protects_unsaved_files=protects_unsaved_files(hold.details or {}),
                shape=shape_of(hold.details or {}),
            )
        )
    return found


async def prove_closing_gone(
    session: AsyncSession, hold_id: uuid.UUID, *, ttl: float, this_boot: uuid.UUID
) -> OwnerProof:
    hold = await session.get(TaskHold, hold_id)
    if hold is None or hold.status != HoldStatus.ACTIVE:
        return OwnerProof(False, "the hold is no longer active")
    details = hold.details or {}
    if shape_of(details) != HOLD_SHAPE:
        # Saved before controllers had boots: every process of that release is gone.
        return OwnerProof(True, "saved by an earlier release: its closing controller is gone")
    _, boot = _closing(details)
    if boot is None:
        return OwnerProof(False, "the hold names no closing controller")
    return await prove_boot_gone(session, uuid.UUID(boot), ttl=ttl, this_boot=this_boot)


async def settle_hold(
    session: AsyncSession, hold_id: uuid.UUID, *, settlement: str, instance: str
) -> bool:
    """Resolve the hold as ``restored`` once, in the caller's transaction; False: nothing done."""
    hold = (
        await session.execute(select(TaskHold).where(TaskHold.id == hold_id).with_for_update())
    ).scalar_one_or_none()
    if hold is None or hold.status != HoldStatus.ACTIVE or hold.set_by != HoldSetter.SYSTEM:
        return False  # resolved meanwhile, or an operator's: never reopened or overridden
    recorded = await session.execute(
        insert(RecoverySettlement)
        .values(kind=KIND, key=settlement, settled_by=instance, outcome="restored")
        .on_conflict_do_nothing()
        .returning(RecoverySettlement.key)
    )
    if recorded.scalar_one_or_none() is None:
        return False
    hold.status = HoldStatus.RESOLVED
    hold.resolution = "restored"
    hold.resolved_by = HoldSetter.SYSTEM
    hold.resolved_by_actor = f"system:{KIND}"
    hold.resolved_at = datetime.now(UTC)
    hold.replay_forbidden = False  # its replay block is lifted; no run is started
    record_activity(
        session,
        SYSTEM,
        RESOLVED_ACTION,
        entity_type="issue",
        entity_id=hold.issue_id,
        company_id=hold.company_id,
        details={
            "hold_id": str(hold.id),
            "run_id": str(hold.run_id),
            "kind": hold.kind,
            "resolution": "restored",
            "shape": shape_of(hold.details or {}),
        },
    )
    # Its task's wait may have ended while it was held: a queued wake may start a run now.
    await notify_wakes(session)
    # Locked before the runner's outbox counter is taken, as every writer of a run does.
    run = await session.get(Run, hold.run_id, with_for_update=RUN_LOCK) if hold.run_id else None
    if run is not None and run.runner_id is not None:
        # The runner kept the session suspended: it may close it now (closing starts nothing).
        await outbox.enqueue_one(session, run.runner_id, Close(seq=0, run_id=run.id))
    return True
