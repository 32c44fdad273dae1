"""The composition root: the only place objects are wired together."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from dependency_injector import containers, providers

from paperclip.db.embedded import EmbeddedPostgres
from paperclip.db.engine import create_engine, create_session_factory
from paperclip.engine.engine import RunEngine
from paperclip.engine.turns.steering import RunSteering
from paperclip.plugin_host import PluginHost
from paperclip.services.agent_checks import AgentChecks
from paperclip.services.agents import AgentService
from paperclip.services.api_keys import ApiKeyService
from paperclip.services.budgets import BudgetService
from paperclip.services.comments import CommentService
from paperclip.services.companies import CompanyService
from paperclip.services.conversations import ConversationService
from paperclip.services.cost_reports import CostReports
from paperclip.services.dashboard import DashboardQueries
from paperclip.services.holds import HoldService
from paperclip.services.inbox import InboxQueries
from paperclip.services.interactions import InteractionService
from paperclip.services.issue_reads import IssueReads
from paperclip.services.issues import IssueService
from paperclip.services.prices import PriceService, prices_from_settings
from paperclip.services.projects import ProjectService
from paperclip.services.routines import RoutineService
from paperclip.services.run_tokens import RunTokenService
from paperclip.services.runners import RunnerService
from paperclip.services.runs import RunQueries
from paperclip.services.wakes import WakeService
from paperclip.services.workspaces import WorkspaceService
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


class Container(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)

    # Discovery runs once per process, when the host is first asked for.
    plugin_host = providers.Singleton(PluginHost.from_settings, settings)

    database_url = providers.Resource(database_url, settings=settings)
    engine = providers.Singleton(create_engine, database_url)
    sessions = providers.Singleton(create_session_factory, engine)
    # What routines and heartbeats read as now: the system's clock unless a test sets one.
    clock = providers.Singleton(lambda settings: settings.clock(), settings)

    companies = providers.Singleton(CompanyService, sessions)
    agents = providers.Singleton(AgentService, sessions)
    issues = providers.Singleton(IssueService, sessions)
    projects = providers.Singleton(ProjectService, sessions)
    routines = providers.Singleton(RoutineService, sessions, clock)
    holds = providers.Singleton(HoldService, sessions)
    workspaces = providers.Singleton(WorkspaceService, sessions)
    costs = providers.Singleton(CostReports, sessions)
    budgets = providers.Singleton(BudgetService, sessions)
    comments = providers.Singleton(CommentService, sessions)
    issue_reads = providers.Singleton(IssueReads, engine)
    wakes = providers.Singleton(WakeService, sessions)
    runs = providers.Singleton(RunQueries, sessions)
    inbox = providers.Singleton(InboxQueries, sessions)
    dashboard = providers.Singleton(DashboardQueries, sessions)
    agent_checks = providers.Singleton(AgentChecks, sessions)
    api_keys = providers.Singleton(ApiKeyService, sessions, engine)
    conversations = providers.Singleton(ConversationService, sessions)
    interactions = providers.Singleton(InteractionService, sessions)
    runners = providers.Singleton(RunnerService, sessions)
    run_tokens = providers.Singleton(RunTokenService, sessions)
    configured_prices = providers.Singleton(prices_from_settings, settings.provided.model_prices)
    prices = providers.Singleton(PriceService, sessions, configured_prices)
    run_engine = providers.Singleton(
        RunEngine,
        sessions,
        plugin_host,
        instance=settings.provided.instance_id,
        lease_seconds=settings.provided.lease_seconds,
        abandon_after=settings.provided.run_abandon_seconds,
        runner_gone_after=settings.provided.runner_gone_seconds,
        max_resumes=settings.provided.run_max_resumes,
        reconcile_seconds=settings.provided.reconcile_seconds,
        workspace_retention_hours=settings.provided.workspace_retention_hours,
        workspace_sweep_seconds=settings.provided.workspace_sweep_seconds,
        budget_sweep_seconds=settings.provided.budget_sweep_seconds,
        prices=configured_prices,
        database=engine,
        clock=clock,
        routine_grace_seconds=settings.provided.routine_grace_seconds,
        routine_pass_seconds=settings.provided.routine_pass_seconds,
        retention_days=providers.Callable(retention_days, settings),
        retention_sweep_seconds=settings.provided.retention_sweep_seconds,
        retention_batch_rows=settings.provided.retention_batch_rows,
    )
    # Steering (seed 004): it kicks this replica's link to the run's runner after commit.
    steering = providers.Singleton(
        RunSteering, sessions, plugin_host, links=run_engine.provided.connections.links
    )
