"""The composition root: the only place objects are wired together."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator

from dependency_injector import containers, providers

from paperclip.clock import system_clock
from paperclip.db.embedded import EmbeddedPostgres
from paperclip.db.engine import JOURNAL_POOL_SIZE, create_engine, create_session_factory
from paperclip.domain.agents.agent_checks import AgentChecks
from paperclip.domain.agents.agents import AgentService
from paperclip.domain.chat.conversations import ConversationService
from paperclip.domain.companies.companies import CompanyService
from paperclip.domain.costs.budgets import BudgetService
from paperclip.domain.costs.cost_reports import CostReports
from paperclip.domain.costs.prices import PriceService, prices_from_settings
from paperclip.domain.holds.holds import HoldService
from paperclip.domain.holds.interactions import InteractionService
from paperclip.domain.issues.comments import CommentService
from paperclip.domain.issues.issue_numbers import NUMBERS_POOL_SIZE, IssueNumbers
from paperclip.domain.issues.issue_reads import IssueReads
from paperclip.domain.issues.issues import IssueService
from paperclip.domain.keys.api_keys import ApiKeyService
from paperclip.domain.overview.dashboard import DashboardQueries
from paperclip.domain.overview.inbox import InboxQueries
from paperclip.domain.projects.projects import ProjectService
from paperclip.domain.routines.routines import RoutineService
from paperclip.domain.runs.run_actions import RunActions
from paperclip.domain.runs.run_tokens import RunTokenService
from paperclip.domain.runs.runners import RunnerService
from paperclip.domain.runs.runs import RunQueries
from paperclip.domain.runs.wakes import WakeService
from paperclip.domain.workspaces.workspaces import WorkspaceService
from paperclip.engine.calls.pipeline import CallPipeline
from paperclip.engine.connections.inbox import RunnerInbox
from paperclip.engine.connections.lease_keeper import LeaseKeeper
from paperclip.engine.connections.runners import RunnerConnections
from paperclip.engine.costs.admission import next_turn_admission
from paperclip.engine.costs.keeper import BudgetKeeper
from paperclip.engine.costs.usage import UsageRecorder
from paperclip.engine.endings.nudge import ReportNudges
from paperclip.engine.endings.turn_end import RunEndings
from paperclip.engine.engine import EngineOptions, RunEngine
from paperclip.engine.links.gate import ControlGate
from paperclip.engine.logs.retention import RetentionKeeper
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.recovery.boots import BootRegistry
from paperclip.engine.recovery.call_recovery import CallRecovery
from paperclip.engine.recovery.port import LOST_RUNS, ControlPlanePort
from paperclip.engine.recovery.presentation_recovery import PresentationRecovery
from paperclip.engine.recovery.reconciler import Reconciler
from paperclip.engine.scheduling.routines import RoutineScheduler
from paperclip.engine.scheduling.scheduler import WakeScheduler
from paperclip.engine.turns.steering import RunSteering
from paperclip.engine.workspaces.keeper import WorkspaceKeeper
from paperclip.engine.workspaces.merges import WorkspaceMerges
from paperclip.plugin_host import PluginHost
from paperclip.settings import Settings

log = logging.getLogger(__name__)


def database_url(settings: Settings) -> Iterator[str]:
    """The database for this process: the configured URL, or the embedded server for its lifetime."""
    if settings.database_url:
        yield settings.database_url
        return
    embedded = EmbeddedPostgres(settings.pgdata)
    log.info("starting the embedded PostgreSQL in %s", settings.pgdata)
    url = embedded.start()
    try:
        yield url
    finally:
        log.info("stopping the embedded PostgreSQL")
        embedded.stop()


def retention_days(settings: Settings) -> dict[str, float]:
    """Each kind of history's retention, by table (``paperclip.engine.logs.retention``)."""
    return {
        "run_events": settings.retention_run_events_days,
        "tool_calls": settings.retention_tool_calls_days,
        "activity_log": settings.retention_activity_days,
    }


def engine_options(settings: Settings) -> EngineOptions:
    """The run engine's tunables, from the settings."""
    return EngineOptions(
        instance=settings.instance_id,
        lease_seconds=settings.lease_seconds,
        abandon_after=settings.run_abandon_seconds,
        runner_gone_after=settings.runner_gone_seconds,
        max_resumes=settings.run_max_resumes,
        report_nudges=settings.run_report_nudges,
        prompt_ownership=settings.prompt_ownership,
        reconcile_seconds=settings.reconcile_seconds,
        workspace_retention_hours=settings.workspace_retention_hours,
        workspace_sweep_seconds=settings.workspace_sweep_seconds,
        budget_sweep_seconds=settings.budget_sweep_seconds,
        routine_grace_seconds=settings.routine_grace_seconds,
        routine_pass_seconds=settings.routine_pass_seconds,
        retention_days=retention_days(settings),
        retention_sweep_seconds=settings.retention_sweep_seconds,
        retention_batch_rows=settings.retention_batch_rows,
    )


def setting_all(*events: asyncio.Event) -> Callable[[], None]:
    """A call that sets every one of ``events``."""

    def set_all() -> None:
        for event in events:
            event.set()

    return set_all


def ends_abandoned(plugins: PluginHost) -> bool:
    """Whether the lease keeper ends runs no runner came back for.

    With the lost-runs policy installed, recovery settles such a run (and holds
    its task): two paths must not race to end one.
    """
    return LOST_RUNS not in {policy.name for policy in plugins.recovery_policies()}


class EngineParts(containers.DeclarativeContainer):
    """The run engine's parts, wired: one set per replica (a test may build its own)."""

    options = providers.Dependency(instance_of=EngineOptions)
    sessions = providers.Dependency()
    plugins = providers.Dependency(instance_of=PluginHost)
    database = providers.Dependency(default=None)
    """The engine a held ``LISTEN`` for wakes uses (None: the scheduler polls)."""
    journal = providers.Dependency(default=providers.Object(None))
    """The engine whose connections plan each statement once (None: the sessions'): the tool
    journal's statements, and the claims of wakes."""
    numbers = providers.Dependency(instance_of=IssueNumbers)
    """Where the issues' numbers come from (a pool of its own)."""
    clock = providers.Dependency(default=system_clock)
    prices = providers.Dependency(default={})

    instance = options.provided.instance
    lease_seconds = options.provided.lease_seconds
    # Whoever may have made work claimable sets it; the scheduler waits on it. An event,
    # not the scheduler's method: the scheduler stands on the connections, which nudge it.
    wakes_nudged = providers.Singleton(asyncio.Event)
    nudge = wakes_nudged.provided.set
    # Set when a lost run's queued turn may wait for a runner here (one connected): the
    # scheduler's next pass looks for queued turns (it does not on every pass).
    resumptions_nudged = providers.Singleton(asyncio.Event)
    runner_connected = providers.Callable(setting_all, wakes_nudged, resumptions_nudged)

    boots = providers.Singleton(
        BootRegistry, sessions, instance=instance, lease_seconds=lease_seconds
    )
    ownership = providers.Singleton(RunOwnership)
    gate = providers.Singleton(ControlGate, sessions, ownership)
    calls = providers.Singleton(
        CallPipeline,
        sessions,
        ownership,
        gate,
        plugins,
        instance=instance,
        journal=journal,
        numbers=numbers,
    )
    call_recovery = providers.Singleton(CallRecovery, calls)
    port = providers.Singleton(
        ControlPlanePort,
        sessions,
        ownership,
        plugins,
        call_recovery,
        instance=instance,
        lease_seconds=lease_seconds,
        limits=options.provided.resume_limits,
        runner_grace=options.provided.runner_grace,
        boot=boots.provided.boot_id,
    )
    reconciler = providers.Singleton(
        Reconciler,
        sessions,
        plugins,
        port,
        instance=instance,
        pass_seconds=options.provided.reconcile_seconds,
    )
    endings = providers.Singleton(
        RunEndings,
        sessions,
        ownership,
        gate,
        plugins,
        instance=instance,
        nudge=nudge,
        on_lost=reconciler.provided.nudge,
        boot=boots.provided.boot_id,
        report_nudges=providers.Factory(
            ReportNudges,
            limit=options.provided.report_nudges,
            admission=providers.Factory(next_turn_admission, clock),
        ),
    )
    presentations = providers.Singleton(
        PresentationRecovery,
        sessions,
        endings,
        pass_seconds=options.provided.reconcile_seconds,
        grace=options.provided.presentation_grace,
    )
    usage = providers.Singleton(
        UsageRecorder, sessions, plugins, instance=instance, prices=prices, clock=clock
    )
    inbox = providers.Singleton(
        RunnerInbox,
        sessions,
        ownership,
        gate,
        calls,
        endings,
        release_retry=options.provided.release_retry,
        usage=usage,
    )
    connections = providers.Singleton(
        RunnerConnections,
        sessions,
        ownership,
        calls,
        call_recovery,
        inbox,
        instance=instance,
        lease_seconds=lease_seconds,
        nudge=runner_connected,
        on_lost=reconciler.provided.nudge,
    )
    scheduler = providers.Singleton(
        WakeScheduler,
        sessions,
        database,
        ownership,
        plugins,
        connections.provided.pick_link,
        instance=instance,
        lease_seconds=lease_seconds,
        on_adopted=call_recovery.provided.adopted,
        runners_here=connections.provided.runner_ids,
        clock=clock,
        nudged=wakes_nudged,
        resumptions=resumptions_nudged,
        prompt_ownership=options.provided.prompt_ownership,
        plans_once=journal,
    )
    budgets = providers.Singleton(
        BudgetKeeper, sessions, pass_seconds=options.provided.budget_sweep_seconds, clock=clock
    )
    leases = providers.Singleton(
        LeaseKeeper,
        sessions,
        ownership,
        instance=instance,
        lease_seconds=lease_seconds,
        abandon_after=options.provided.abandon_after,
        nudge=nudge,
        ends_abandoned=providers.Callable(ends_abandoned, plugins),
    )
    workspaces = providers.Singleton(
        WorkspaceKeeper,
        sessions,
        connections.provided.links,
        retention=options.provided.workspace_retention,
        pass_seconds=options.provided.workspace_sweep_seconds,
    )
    routines = providers.Singleton(
        RoutineScheduler,
        sessions,
        numbers,
        clock=clock,
        grace_seconds=options.provided.routine_grace_seconds,
        pass_seconds=options.provided.routine_pass_seconds,
    )
    retention = providers.Singleton(
        RetentionKeeper,
        sessions,
        retention_days=providers.Callable(dict, options.provided.retention_days),
        pass_seconds=options.provided.retention_sweep_seconds,
        batch_rows=options.provided.retention_batch_rows,
    )
    run_engine = providers.Singleton(
        RunEngine,
        instance=instance,
        boots=boots,
        ownership=ownership,
        calls=calls,
        call_recovery=call_recovery,
        port=port,
        reconciler=reconciler,
        endings=endings,
        presentations=presentations,
        usage=usage,
        connections=connections,
        scheduler=scheduler,
        budgets=budgets,
        leases=leases,
        workspaces=workspaces,
        routines=routines,
        retention=retention,
    )


class Container(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)

    # Discovery runs once per process, when the host is first asked for.
    plugin_host = providers.Singleton(PluginHost.from_settings, settings)

    database_url = providers.Resource(database_url, settings=settings)
    engine = providers.Singleton(create_engine, database_url)
    sessions = providers.Singleton(create_session_factory, engine)
    # The tool journal's and the wake claims' statements: a pool of their own, each statement
    # planned once.
    journal_engine = providers.Singleton(
        create_engine, database_url, pool_size=JOURNAL_POOL_SIZE, generic_plans=True
    )
    # Issue numbers: statements that commit on their own, on a pool of their own.
    numbers_engine = providers.Singleton(create_engine, database_url, pool_size=NUMBERS_POOL_SIZE)
    issue_numbers = providers.Singleton(IssueNumbers, numbers_engine)
    # What routines and heartbeats read as now: the system's clock unless a test sets one.
    clock = providers.Singleton(lambda settings: settings.clock(), settings)

    companies = providers.Singleton(CompanyService, sessions)
    agents = providers.Singleton(AgentService, sessions)
    issues = providers.Singleton(IssueService, sessions, issue_numbers)
    projects = providers.Singleton(ProjectService, sessions)
    routines = providers.Singleton(RoutineService, sessions, issue_numbers, clock)
    holds = providers.Singleton(HoldService, sessions)
    workspaces = providers.Singleton(WorkspaceService, sessions)
    costs = providers.Singleton(CostReports, sessions)
    budgets = providers.Singleton(BudgetService, sessions)
    comments = providers.Singleton(CommentService, sessions)
    issue_reads = providers.Singleton(IssueReads, engine)
    wakes = providers.Singleton(WakeService, sessions)
    runs = providers.Singleton(RunQueries, sessions)
    inbox = providers.Singleton(InboxQueries, sessions)
    run_actions = providers.Singleton(RunActions, sessions)
    dashboard = providers.Singleton(DashboardQueries, sessions)
    agent_checks = providers.Singleton(AgentChecks, sessions)
    api_keys = providers.Singleton(ApiKeyService, sessions, engine)
    conversations = providers.Singleton(ConversationService, sessions)
    interactions = providers.Singleton(InteractionService, sessions)
    runners = providers.Singleton(RunnerService, sessions)
    run_tokens = providers.Singleton(RunTokenService, sessions)
    configured_prices = providers.Singleton(prices_from_settings, settings.provided.model_prices)
    prices = providers.Singleton(PriceService, sessions, configured_prices)
    engine_parts = providers.Container(
        EngineParts,
        options=providers.Singleton(engine_options, settings),
        sessions=sessions,
        plugins=plugin_host,
        database=engine,
        journal=journal_engine,
        numbers=issue_numbers,
        clock=clock,
        prices=configured_prices,
    )
    run_engine = engine_parts.run_engine
    # Steering (seed 004): it kicks this replica's link to the run's runner after commit.
    steering = providers.Singleton(
        RunSteering, sessions, plugin_host, links=run_engine.provided.connections.links
    )
    # Merges: the request waits for the runner's answer, which any replica records.
    merges = providers.Singleton(
        WorkspaceMerges,
        sessions,
        links=run_engine.provided.connections.links,
        wait_seconds=settings.provided.merge_wait_seconds,
    )


async def close_pools(container: Container) -> None:
    """Close the container's connection pools, on the loop that opened their connections."""
    await container.engine().dispose()
    await container.journal_engine().dispose()
    await container.numbers_engine().dispose()
