"""The run engine of one control-plane replica: its parts, wired, started and stopped.

- ``ownership``: the runs this replica controls, their epochs and verified tokens;
- ``connections``: runner connections (hello, resume, adoption, the link's life);
- ``inbox``: a runner's messages, in order and in batches;
- ``calls``: the tool-call pipeline (admit, execute, settle, recover);
- ``endings``: a turn's end (terminal guard, status decision, presentation);
- ``scheduler``: wakes to runs, nudged by PostgreSQL notifications;
- ``leases``: renewing this replica's leases, ending abandoned runs;
- ``reconciler``: the recovery policies, in the background, through the ``port``;
- ``presentation_recovery``: answers whose status decision committed, presented after a crash;
- ``workspaces``: the worktrees of ended issues, released once their retention passed;
- ``usage``, ``budgets``: the usage runners report, recorded and charged once; work a budget
  held, let go once the budget allows it again.
- ``routines``: routines' due cron slots, their queued executions, agents' heartbeats.
- ``retention``: history past its retention (events, tool journal, activity), removed in batches.

Everything it knows is in PostgreSQL; a replica that dies loses nothing but
its leases, which another replica adopts.

Imports: calls, connections, costs, endings, links, logs, ownership, recovery, scheduling,
workspaces
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from paperclip.clock import Clock, system_clock
from paperclip.db.availability import log_failure
from paperclip.engine.calls.pipeline import CallPipeline
from paperclip.engine.connections.inbox import RunnerInbox
from paperclip.engine.connections.lease_keeper import LeaseKeeper
from paperclip.engine.connections.runners import STOPPING, RunnerConnections
from paperclip.engine.costs.keeper import BudgetKeeper
from paperclip.engine.costs.usage import UsageRecorder
from paperclip.engine.endings.turn_end import RunEndings
from paperclip.engine.links.gate import ControlGate
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.links.transport import Transport, TransportClosed
from paperclip.engine.logs.retention import RetentionKeeper
from paperclip.engine.ownership.fence import StaleEpochError
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.recovery.boots import BootRegistry
from paperclip.engine.recovery.call_recovery import CallRecovery
from paperclip.engine.recovery.port import LOST_RUNS, ControlPlanePort
from paperclip.engine.recovery.presentation_recovery import PresentationRecovery
from paperclip.engine.recovery.reconciler import Reconciler
from paperclip.engine.recovery.resumption import Limits
from paperclip.engine.scheduling.routines import RoutineScheduler
from paperclip.engine.scheduling.scheduler import WakeScheduler
from paperclip.engine.workspaces.keeper import WorkspaceKeeper
from paperclip.models import Runner
from paperclip.plugin_host import PluginHost
from paperclip.services.prices import Price

log = logging.getLogger(__name__)

PLUGIN_CALL_GRACE_SECONDS = 5.0
"""How long a stop waits for running plugin tools to finish and save their results."""


class RunEngine:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        plugins: PluginHost,
        *,
        instance: str,
        lease_seconds: float,
        abandon_after: float = 600.0,
        runner_gone_after: float = 60.0,
        max_resumes: int = 3,
        reconcile_seconds: float = 2.0,
        workspace_retention_hours: float = 24.0,
        workspace_sweep_seconds: float = 60.0,
        budget_sweep_seconds: float = 60.0,
        prices: Mapping[str, Price] | None = None,
        database: AsyncEngine | None = None,
        clock: Clock = system_clock,
        routine_grace_seconds: float = 60.0,
        routine_pass_seconds: float = 1.0,
        retention_days: Mapping[str, float] | None = None,
        retention_sweep_seconds: float = 300.0,
        retention_batch_rows: int = 1000,
    ) -> None:
        self.instance = instance
        self.boots = BootRegistry(sessions, instance=instance, lease_seconds=lease_seconds)
        self.ownership = RunOwnership()
        gate = ControlGate(sessions, self.ownership)
        self.calls = CallPipeline(sessions, self.ownership, gate, plugins, instance=instance)
        self.call_recovery = CallRecovery(self.calls)
        self.port = ControlPlanePort(
            sessions,
            self.ownership,
            plugins,
            self.call_recovery,
            instance=instance,
            lease_seconds=lease_seconds,
            limits=Limits(max_resumes, timedelta(seconds=abandon_after)),
            runner_grace=timedelta(seconds=runner_gone_after),
            boot=self.boots.boot_id,
        )
        self.reconciler = Reconciler(
            sessions, plugins, self.port, instance=instance, pass_seconds=reconcile_seconds
        )
        self.endings = RunEndings(
            sessions,
            self.ownership,
            gate,
            plugins,
            instance=instance,
            nudge=self.nudge,
            on_lost=self.reconciler.nudge,
            boot=self.boots.boot_id,
        )
        self.presentations = PresentationRecovery(
            sessions,
            self.endings,
            pass_seconds=reconcile_seconds,
            grace=timedelta(seconds=2 * lease_seconds),
        )
        retention = timedelta(hours=workspace_retention_hours)
        self.usage = UsageRecorder(
            sessions, plugins, instance=instance, prices=prices or {}, clock=clock
        )
        inbox = RunnerInbox(
            sessions,
            self.ownership,
            gate,
            self.calls,
            self.endings,
            release_retry=max(retention, timedelta(seconds=workspace_sweep_seconds)),
            usage=self.usage,
        )
        self.connections = RunnerConnections(
            sessions,
            self.ownership,
            self.calls,
            self.call_recovery,
            inbox,
            instance=instance,
            lease_seconds=lease_seconds,
            nudge=self.nudge,
            on_lost=self.reconciler.nudge,
        )
        self.scheduler = WakeScheduler(
            sessions,
            database,
            self.ownership,
            plugins,
            self.connections.pick_link,
            instance=instance,
            lease_seconds=lease_seconds,
            on_adopted=self._adopted,
            runners_here=lambda: list(self.connections.links),
            clock=clock,
        )
        self.budgets = BudgetKeeper(sessions, pass_seconds=budget_sweep_seconds, clock=clock)
        self.leases = LeaseKeeper(
            sessions,
            self.ownership,
            instance=instance,
            lease_seconds=lease_seconds,
            abandon_after=abandon_after,
            nudge=self.nudge,
            # With the lost-runs policy, recovery settles such a run (and holds its task).
            ends_abandoned=LOST_RUNS not in {p.name for p in plugins.recovery_policies()},
        )
        self.workspaces = WorkspaceKeeper(
            sessions,
            lambda: self.connections.links,
            retention=retention,
            pass_seconds=workspace_sweep_seconds,
        )
        self.routines = RoutineScheduler(
            sessions,
            clock=clock,
            grace_seconds=routine_grace_seconds,
            pass_seconds=routine_pass_seconds,
        )
        self.retention = RetentionKeeper(
            sessions,
            retention_days=dict(retention_days or {}),
            pass_seconds=retention_sweep_seconds,
            batch_rows=retention_batch_rows,
        )
        self._loops: list[asyncio.Task[Any]] = []
        self._adoptions: set[asyncio.Task[None]] = set()

    def _adopted(self, link: RunnerLink, run_id: uuid.UUID) -> None:
        """A run adopted to start its next turn: settle what its lost turn left pending."""
        task = asyncio.create_task(self._recover_adopted(link, run_id))
        self._adoptions.add(task)
        task.add_done_callback(self._adoptions.discard)

    async def _recover_adopted(self, link: RunnerLink, run_id: uuid.UUID) -> None:
        try:
            await self.call_recovery.recover_pending(run_id, runner_id=link.runner_id, link=link)
        except StaleEpochError:
            # Its lease moved on meanwhile: the next controller's adoption recovers them.
            log.info("run %s changed controller before its inputs were recovered here", run_id)
        except TransportClosed:
            pass  # the replies are in the runner's outbox: sent when it connects again
        except Exception as exc:
            log_failure(log, "recovering the inputs of adopted run %s failed", exc, run_id)

    async def start(self) -> None:
        with contextlib.suppress(Exception):  # else its loop registers it once it can
            await self.boots.register()
        self._loops = [
            asyncio.create_task(self.boots.run(), name="controller-boot"),
            asyncio.create_task(self.scheduler.run(), name="wake-scheduler"),
            asyncio.create_task(self.leases.run(), name="lease-keeper"),
            asyncio.create_task(self.reconciler.run(), name="reconciler"),
            asyncio.create_task(self.presentations.run(), name="presentation-recovery"),
            asyncio.create_task(self.workspaces.run(), name="workspace-keeper"),
            asyncio.create_task(self.budgets.run(), name="budget-keeper"),
            asyncio.create_task(self.routines.run(), name="routine-scheduler"),
            asyncio.create_task(self.retention.run(), name="retention-keeper"),
        ]

    def begin_stop(self) -> None:
        """The server began to stop: what waits for another replica (a runner connection
        adopting runs) gives up now, instead of holding the server's graceful stop."""
        self.connections.stopping.set()

    async def stop(self) -> None:
        """Close runner connections and hand this replica's leases over; a second call does nothing."""
        self.begin_stop()
        loops, self._loops = self._loops, []
        for task in loops:
            task.cancel()
        # Before the leases go: a plugin call saves its result under its run's lease.
        await self.calls.plugin_calls.drain(PLUGIN_CALL_GRACE_SECONDS)
        await self.connections.close_all(STOPPING, "control plane stopping")
        for task in loops:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await self.leases.release_all()
        await self.boots.retire()

    def nudge(self) -> None:
        """Something may be claimable now (a wake, a finished run, a runner)."""
        self.scheduler.nudge()

    async def serve_runner(self, runner: Runner, transport: Transport) -> None:
        """Serve one authenticated runner connection until it drops."""
        await self.connections.serve(runner, transport)

    async def claim_wakes(self) -> int:
        return await self.scheduler.claim_wakes()
