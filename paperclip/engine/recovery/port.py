"""The control plane's operations for recovery policies (``RecoveryPort``, hook API 1.3).

Each operation is one or two transactions of its own, under the run's fence.
A settlement names its candidate and is recorded in ``recovery_settlements``
in the same transaction as its effect: a second settlement of the same
candidate (another pass, another replica) hits the primary key and changes
nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta

from paperclip_hookspecs.recovery import (
    CallbacksRecovered,
    CleanupHold,
    LostRun,
    OwnerProof,
    OwnerRef,
    PendingCallback,
    ResumeOutcome,
)
from sqlalchemy import and_, func, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.engine.ownership import leases
from paperclip.engine.ownership.fence import StaleEpochError, lock_run
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.recovery import cleanup_holds
from paperclip.engine.recovery.call_recovery import CallRecovery
from paperclip.engine.recovery.resumption import Limits, settle_lost_run
from paperclip.engine.turns.lifecycle import RUNNER_GONE
from paperclip.models import (
    RecoverySettlement,
    Run,
    RunStatus,
    RunTurn,
    ToolCall,
    ToolCallStatus,
    TurnStatus,
)
from paperclip.models import Runner as RunnerRow
from paperclip.plugin_host import PluginHost

log = logging.getLogger(__name__)

LOST_RUNS = "lost_runs"
"""The ownership kind whose settlements this port records for ``resume_run``."""
WAITING_FOR_RUNNER = "waiting_for_runner"


class ControlPlanePort:
    """What the reconciler hands each policy as ``RecoveryContext.port``."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        ownership: RunOwnership,
        plugins: PluginHost,
        recovery: CallRecovery,
        *,
        instance: str,
        lease_seconds: float,
        limits: Limits,
        runner_grace: timedelta,
        boot: uuid.UUID | None = None,
    ) -> None:
        self.sessions = sessions
        self.ownership = ownership
        self.plugins = plugins
        self.recovery = recovery
        self.instance = instance
        self.ttl = lease_seconds
        self.limits = limits
        self.runner_grace = runner_grace
        self.boot = boot or uuid.uuid4()
        """This process's boot: a hold it stamped itself is never proven gone here."""
        """How long a run's runner may be away (its lease expired) before the turn counts lost."""

    async def lost_runs(self, limit: int) -> Sequence[LostRun]:
        """Active runs whose current turn is lost, whose runner is gone, or whose queued turn
        waited too long for a runner; oldest first. Only active runs are read."""
        grace = self.runner_grace
        wait = self.limits.wait_for_runner
        stmt = (
            select(Run, RunTurn.status, RunTurn.error_code)
            .outerjoin(RunTurn, and_(RunTurn.run_id == Run.id, RunTurn.number == Run.turn))
            .outerjoin(RunnerRow, RunnerRow.id == Run.runner_id)
            .where(Run.status.in_(leases.ACTIVE))
            .where(
                or_(
                    and_(Run.phase == "turn", RunTurn.status == TurnStatus.LOST),
                    and_(
                        Run.phase == "turn",
                        Run.lease_expires_at < func.now() - grace,
                        RunnerRow.replica.is_(None),
                    ),
                    and_(Run.phase == "resuming", Run.resumable_since < func.now() - wait),
                )
            )
            .order_by(Run.lease_expires_at.nulls_first())
            .limit(limit)
        )
        async with self.sessions() as session:
            rows = (await session.execute(stmt)).all()
        return [self._lost(run, status, code) for run, status, code in rows]

    @staticmethod
    def _lost(run: Run, status: str | None, code: str | None) -> LostRun:
        if run.phase == "resuming":
            reason = WAITING_FOR_RUNNER
        elif status == TurnStatus.LOST:
            reason = code or RUNNER_GONE
        else:
            reason = RUNNER_GONE
        owner = (
            OwnerRef(run.controller_instance, run.controller_epoch)
            if run.controller_instance
            else None
        )
        return LostRun(
            run_id=str(run.id),
            company_id=str(run.company_id),
            issue_id=str(run.issue_id) if run.issue_id else None,
            turn=run.turn,
            reason=reason,
            owner=owner,
        )

    async def take_over_run(self, run_id: str) -> OwnerProof:
        """Adopt the run once its lease expired: the epoch moves, fencing the earlier owner."""
        key = uuid.UUID(run_id)
        async with self.sessions.begin() as session:
            epoch = await leases.adopt(session, key, instance=self.instance, ttl=self.ttl)
            if epoch is None:
                holder = await session.get(Run, key)
                who = holder.controller_instance if holder is not None else None
                return OwnerProof(False, f"its lease is held by {who!r}")
        self.ownership.own(key, epoch)
        return OwnerProof(True, f"lease expired; the epoch fence moved to {epoch}", epoch=epoch)

    async def pending_callbacks(self, limit: int) -> Sequence[PendingCallback]:
        """Pending inputs of runs controlled here that an earlier epoch admitted, oldest first."""
        owned = self.ownership.snapshot()
        if not owned:
            return []
        stmt = (
            select(ToolCall)
            .where(ToolCall.run_id.in_(list(owned)), ToolCall.status == ToolCallStatus.PENDING)
            .order_by(ToolCall.id)
        )
        async with self.sessions() as session:
            rows = (await session.execute(stmt)).scalars().all()
        return [
            PendingCallback(
                run_id=str(row.run_id),
                company_id=str(row.company_id),
                input_id=str(row.id),
                tool_name=row.tool,
                admitted_by=row.admitted_by,
                admitted_epoch=row.admitted_epoch,
                epoch=owned[row.run_id],
            )
            for row in rows
            if row.admitted_epoch < owned.get(row.run_id, 0)
        ][:limit]

    async def recover_callbacks(self, run_id: str, *, epoch: int) -> CallbacksRecovered:
        """Ask the tool-recovery hook again about the run's pending inputs, under ``epoch``."""
        key = uuid.UUID(run_id)
        if self.ownership.snapshot().get(key) != epoch:
            return CallbacksRecovered(settled=0, pending=0)  # it moved on: nothing of ours
        async with self.sessions() as session:
            runner_id = (
                await session.execute(select(Run.runner_id).where(Run.id == key))
            ).scalar_one_or_none()
        if runner_id is None:
            return CallbacksRecovered(settled=0, pending=0)
        return await self.recovery.recover_pending(key, runner_id=runner_id)

    async def cleanup_holds(self, limit: int) -> Sequence[CleanupHold]:
        """Active system no-replay holds of runs quarantined after a completed turn."""
        async with self.sessions() as session:
            return await cleanup_holds.list_holds(session, limit)

    async def prove_closing_controller_gone(self, hold_id: str) -> OwnerProof:
        """Retire the closing controller's boot if it was not seen for a lease: the proof."""
        async with self.sessions.begin() as session:
            return await cleanup_holds.prove_closing_gone(
                session, uuid.UUID(hold_id), ttl=self.ttl, this_boot=self.boot
            )

    async def settle_cleanup_hold(self, hold_id: str, *, settlement: str) -> bool:
        """Resolve the hold as ``restored``, lift its replay block, log it; once."""
        async with self.sessions.begin() as session:
            return await cleanup_holds.settle_hold(
                session, uuid.UUID(hold_id), settlement=settlement, instance=self.instance
            )

    async def resume_run(self, run_id: str, *, epoch: int, settlement: str) -> ResumeOutcome:
        """Settle a lost run once: its next turn queued, or its task held."""
        key = uuid.UUID(run_id)
        try:
            async with self.sessions() as session:
                runner_id = (
                    await session.execute(select(Run.runner_id).where(Run.id == key))
                ).scalar_one_or_none()
            if runner_id is not None:
                # Inputs of the lost turn without a result are settled first, under this epoch.
                await self.recovery.recover_pending(key, runner_id=runner_id)
            async with self.sessions.begin() as session:
                run = await lock_run(session, key, instance=self.instance, epoch=epoch)
                if run.status != RunStatus.RUNNING:
                    return ResumeOutcome("already_settled", f"the run is {run.status}")
                if not await _record_once(session, settlement, self.instance):
                    return ResumeOutcome("already_settled", "settled by another pass")
                reason = await _loss_reason(session, run)
                outcome = await settle_lost_run(
                    session, run, self.plugins, self.limits, reason=reason
                )
        except StaleEpochError as exc:
            return ResumeOutcome("already_settled", str(exc))
        finally:
            self.ownership.release(key, epoch=epoch)
        log.info("lost run %s settled: %s", run_id, outcome)
        return ResumeOutcome(outcome)  # type: ignore[arg-type]


async def _record_once(session: AsyncSession, settlement: str, instance: str) -> bool:
    """Record the settlement in the caller's transaction; False: it was recorded before."""
    inserted = await session.execute(
        insert(RecoverySettlement)
        .values(kind=LOST_RUNS, key=settlement, settled_by=instance, outcome="settled")
        .on_conflict_do_nothing()
        .returning(RecoverySettlement.key)
    )
    return inserted.scalar_one_or_none() is not None


async def _loss_reason(session: AsyncSession, run: Run) -> str:
    turn = (
        await session.execute(
            select(RunTurn.status, RunTurn.error_code).where(
                RunTurn.run_id == run.id, RunTurn.number == run.turn
            )
        )
    ).one_or_none()
    if turn is not None and turn.status == TurnStatus.LOST and turn.error_code:
        return str(turn.error_code)
    return RUNNER_GONE
