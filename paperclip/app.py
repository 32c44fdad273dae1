"""``create_app``: the Litestar application, built from a container. No app exists at import time."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar, Router
from litestar.di import Provide

from paperclip.api.auth import admit
from paperclip.api.board import BOARD_ROUTES
from paperclip.api.gate import RequestGate
from paperclip.api.health import health
from paperclip.api.metrics import metrics_page
from paperclip.api.openapi import complete, openapi_config
from paperclip.api.plugins import PluginController
from paperclip.api.recovery import recovery_status
from paperclip.api.runner_ws import runner_connect
from paperclip.api.stream_limits import StreamLimits, stream_paths
from paperclip.common.server_secrets import server_secret
from paperclip.container import Container, close_pools
from paperclip.db.availability import when_reachable
from paperclip.domain.agents.agents_routes import AgentController
from paperclip.domain.agents.org_chart_routes import OrgChartController
from paperclip.domain.agents.providers_routes import ProviderController
from paperclip.domain.chat.routes import ConversationController
from paperclip.domain.companies.routes import CompanyController
from paperclip.domain.costs.budgets_routes import BudgetController
from paperclip.domain.costs.costs_routes import CostController, PriceController
from paperclip.domain.holds.holds_routes import HoldController
from paperclip.domain.holds.interactions_routes import InteractionController
from paperclip.domain.issues.comments_routes import CommentController
from paperclip.domain.issues.issues_routes import IssueController
from paperclip.domain.keys.routes import ApiKeyController
from paperclip.domain.overview.routes import OverviewController
from paperclip.domain.projects.routes import ProjectController
from paperclip.domain.routines.routes import RoutineController
from paperclip.domain.runs.run_actions_routes import RunActionController
from paperclip.domain.runs.run_stream_routes import RunStreamController
from paperclip.domain.runs.runs_routes import RunController
from paperclip.domain.runs.steering_routes import RunSteerController
from paperclip.domain.workspaces.routes import WorkspaceController
from paperclip.http.access import current_actor
from paperclip.http.cursors import CursorCodec, provide_pages
from paperclip.http.errors import EXCEPTION_HANDLERS
from paperclip.operator_token import OperatorTokenError, ensure_token
from paperclip.plugin_host import PluginHost
from paperclip.settings import ConfigurationError, DeploymentMode, Settings

log = logging.getLogger(__name__)


def _service(provider: object) -> Provide:
    return Provide(lambda: provider(), sync_to_thread=False)  # type: ignore[operator]


def local_operator_token(settings: Settings) -> str | None:
    """The token the operator shows without login (made in the data dir at the first start);
    None when every caller must show a key instead, or when the operator turned it off."""
    if settings.deployment_mode is not DeploymentMode.LOCAL_TRUSTED:
        return None
    if not settings.operator_token_required:
        return None
    try:
        return ensure_token(settings.data_dir)
    except (OperatorTokenError, OSError) as exc:
        raise ConfigurationError(f"the operator token: {exc}") from exc


def create_app(
    settings: Settings, plugin_host: PluginHost | None = None, *, container: Container | None = None
) -> Litestar:
    """Build the app. Without a container, one is made for ``settings`` (and owns the database).

    A plugin host given here replaces the container's, for the engine too.
    Its ``check_pending()`` runs here: a set of plugins that must not serve
    stops startup.
    """
    settings.check_bind_address()
    operator_token = local_operator_token(settings)
    owns_container = container is None
    if container is None:
        container = Container(settings=settings)
    if plugin_host is not None:
        container.plugin_host.override(plugin_host)
    host = container.plugin_host()
    host.check_pending()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        if owns_container:
            container.init_resources()
        app.state.engine = container.engine()
        app.state.journal_engine = container.journal_engine()
        app.state.numbers_engine = container.numbers_engine()
        app.state.api_keys = container.api_keys()
        app.state.run_tokens = container.run_tokens()
        app.state.runners = container.runners()
        # The database may have gone away since `serve` migrated it (a restart, an outage):
        # the first read waits for it as the migration did, instead of failing the start.
        secret = await when_reachable(
            lambda: server_secret(container.sessions(), "cursor"),
            settings.database_wait_seconds,
            log,
        )
        app.state.cursor_codec = CursorCodec(secret)
        app.state.run_engine = container.run_engine()
        await app.state.run_engine.start()
        # Checked keys are remembered while this replica hears of every change to a key;
        # the local mode checks none, so it holds no listening connection for them.
        keys = (
            asyncio.create_task(app.state.api_keys.cache.listen(app.state.engine))
            if settings.deployment_mode is DeploymentMode.AUTHENTICATED
            else None
        )
        # What startup made lives as long as the process: the collector need not scan it
        # again at every full collection (about a tenth of a request's CPU at 8 clients).
        gc.freeze()
        try:
            yield
        finally:
            if keys is not None:
                keys.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await keys
            await app.state.run_engine.stop()
            await close_pools(container)
            if owns_container:
                container.shutdown_resources()

    api = Router(
        path="/api",
        route_handlers=[
            health,
            CompanyController,
            AgentController,
            OrgChartController,
            IssueController,
            ProjectController,
            RoutineController,
            CommentController,
            RunController,
            RunStreamController,
            RunSteerController,
            RunActionController,
            ConversationController,
            InteractionController,
            HoldController,
            OverviewController,
            WorkspaceController,
            CostController,
            PriceController,
            BudgetController,
            recovery_status,
            metrics_page,
            ApiKeyController,
            PluginController,
            ProviderController,
            runner_connect,
        ],
    )
    authenticated = settings.deployment_mode is DeploymentMode.AUTHENTICATED
    app = Litestar(
        route_handlers=[api, *BOARD_ROUTES],
        guards=[admit],
        dependencies={
            "actor": Provide(current_actor, sync_to_thread=False),
            "pages": Provide(provide_pages, sync_to_thread=False),
            "companies": _service(container.companies),
            "agents": _service(container.agents),
            "issues": _service(container.issues),
            "projects": _service(container.projects),
            "routines": _service(container.routines),
            "holds": _service(container.holds),
            "workspaces": _service(container.workspaces),
            "costs": _service(container.costs),
            "prices": _service(container.prices),
            "budgets": _service(container.budgets),
            "comments": _service(container.comments),
            "issue_reads": _service(container.issue_reads),
            "wakes": _service(container.wakes),
            "runs": _service(container.runs),
            "api_keys": _service(container.api_keys),
            "steering": _service(container.steering),
            "merges": _service(container.merges),
            "conversations": _service(container.conversations),
            "interactions": _service(container.interactions),
            "inbox": _service(container.inbox),
            "run_actions": _service(container.run_actions),
            "dashboard": _service(container.dashboard),
            "agent_checks": _service(container.agent_checks),
            "plugin_host": Provide(lambda: host, sync_to_thread=False),
        },
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[lifespan],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=openapi_config(),
        # No CORS: a browser page of another origin gets no access (and, without login,
        # no answer at all: paperclip.api.gate).
        cors_config=None,
        debug=False,
        logging_config=None,  # the process configures logging (paperclip.logging)
    )
    complete(
        app, authenticated=authenticated or operator_token is not None, providers=host.providers()
    )
    app.asgi_handler = RequestGate(
        StreamLimits(
            app.asgi_handler,
            paths=stream_paths(app),
            per_key=settings.max_streams_per_key,
            per_address=settings.max_streams_per_address,
        ),
        local=not authenticated,
        allowed_hosts=settings.allowed_hosts,
        max_body_bytes=settings.max_body_bytes,
    )
    app.state.settings = settings
    app.state.operator_token = operator_token
    app.state.container = container
    app.state.plugin_host = host
    return app
