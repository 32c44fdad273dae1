"""The run engine of one control-plane replica: its parts, started and stopped.

The parts are wired in the composition root (``paperclip.container``,
``EngineParts``); this module names what they are tuned by (``EngineOptions``)
and runs their loops.

- ``ownership``: the runs this replica controls, their epochs and verified tokens;
- ``connections``: runner connections (hello, resume, adoption, the link's life), and
  their inbox: a runner's messages, in order and in batches;
- ``calls``, ``call_recovery``: the tool-call pipeline (admit, execute, settle), and the
  inputs an earlier controller left without a result;
- ``endings``: a turn's end (terminal guard, status decision, presentation);
- ``scheduler``: wakes to runs, nudged by PostgreSQL notifications;
- ``leases``: renewing this replica's leases, ending abandoned runs;
- ``reconciler``: the recovery policies, in the background, through the ``port``;
- ``presentations``: answers whose status decision committed, presented after a crash;
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from paperclip.engine.calls.pipeline import CallPipeline
from paperclip.engine.connections.lease_keeper import LeaseKeeper
from paperclip.engine.connections.runners import STOPPING, RunnerConnections
from paperclip.engine.costs.keeper import BudgetKeeper
from paperclip.engine.costs.usage import UsageRecorder
from paperclip.engine.endings.turn_end import RunEndings
from paperclip.engine.links.transport import Transport
from paperclip.engine.logs.retention import RetentionKeeper
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.recovery.boots import BootRegistry
from paperclip.engine.recovery.call_recovery import CallRecovery
from paperclip.engine.recovery.port import ControlPlanePort
from paperclip.engine.recovery.presentation_recovery import PresentationRecovery
from paperclip.engine.recovery.reconciler import Reconciler
from paperclip.engine.recovery.resumption import Limits
from paperclip.engine.scheduling.routines import RoutineScheduler
from paperclip.engine.scheduling.scheduler import WakeScheduler
from paperclip.engine.workspaces.keeper import WorkspaceKeeper
from paperclip.models import Runner

PLUGIN_CALL_GRACE_SECONDS = 5.0
"""How long a stop waits for running plugin tools to finish and save their results."""


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """What the engine's parts are tuned by: the ``PAPERCLIP_*`` settings, or a test's values."""

    instance: str
    lease_seconds: float
    abandon_after: float = 600.0
    runner_gone_after: float = 60.0
    max_resumes: int = 3
    report_nudges: int = 1
    """How often a turn that ended without the run's report is asked for it in its session."""
    prompt_ownership: bool = True
    """New runs' prompts carry ownership metadata (v5); off is the rollback (v4)."""
    reconcile_seconds: float = 2.0
    workspace_retention_hours: float = 24.0
    workspace_sweep_seconds: float = 60.0
    budget_sweep_seconds: float = 60.0
    routine_grace_seconds: float = 60.0
    routine_pass_seconds: float = 1.0
    retention_days: Mapping[str, float] = field(default_factory=dict)
    retention_sweep_seconds: float = 300.0
    retention_batch_rows: int = 1000

    @property
    def resume_limits(self) -> Limits:
        """How often, and for how long, a lost run goes on in a next turn."""
        return Limits(self.max_resumes, timedelta(seconds=self.abandon_after))

    @property
    def runner_grace(self) -> timedelta:
        """How long past its lease a turn waits for its runner before it counts lost."""
        return timedelta(seconds=self.runner_gone_after)

    @property
    def presentation_grace(self) -> timedelta:
        """How long presentation recovery leaves an answer to the live path (two leases)."""
        return timedelta(seconds=2 * self.lease_seconds)

    @property
    def workspace_retention(self) -> timedelta:
        """How long an ended issue's worktree is kept."""
        return timedelta(hours=self.workspace_retention_hours)

    @property
    def release_retry(self) -> timedelta:
        """When a worktree release no runner answered is asked again."""
        return max(self.workspace_retention, timedelta(seconds=self.workspace_sweep_seconds))


class RunEngine:
    """The engine's parts, as the composition root built them: their loops started and stopped."""

    def __init__(
        self,
        *,
        instance: str,
        boots: BootRegistry,
        ownership: RunOwnership,
        calls: CallPipeline,
        call_recovery: CallRecovery,
        port: ControlPlanePort,
        reconciler: Reconciler,
        endings: RunEndings,
        presentations: PresentationRecovery,
        usage: UsageRecorder,
        connections: RunnerConnections,
        scheduler: WakeScheduler,
        budgets: BudgetKeeper,
        leases: LeaseKeeper,
        workspaces: WorkspaceKeeper,
        routines: RoutineScheduler,
        retention: RetentionKeeper,
    ) -> None:
        self.instance = instance
        self.boots = boots
        self.ownership = ownership
        self.calls = calls
        self.call_recovery = call_recovery
        self.port = port
        self.reconciler = reconciler
        self.endings = endings
        self.presentations = presentations
        self.usage = usage
        self.connections = connections
        self.scheduler = scheduler
        self.budgets = budgets
        self.leases = leases
        self.workspaces = workspaces
        self.routines = routines
        self.retention = retention
        self._loops: list[asyncio.Task[Any]] = []

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
