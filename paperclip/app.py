"""``create_app``: the Litestar application, built from a container. No app exists at import time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar, Router
from litestar.config.cors import CORSConfig
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin

import paperclip
from paperclip.api.agents import AgentController
from paperclip.api.auth import authenticate, current_actor
from paperclip.api.comments import CommentController
from paperclip.api.companies import CompanyController
from paperclip.api.errors import EXCEPTION_HANDLERS
from paperclip.api.health import health
from paperclip.api.issues import IssueController
from paperclip.api.plugins import PluginController
from paperclip.api.runner_ws import runner_connect
from paperclip.api.runs import RunController
from paperclip.container import Container
from paperclip.plugins import PluginHost
from paperclip.settings import Settings


def _service(provider: object) -> Provide:
    return Provide(lambda: provider(), sync_to_thread=False)  # type: ignore[operator]


def create_app(
    settings: Settings, plugin_host: PluginHost | None = None, *, container: Container | None = None
) -> Litestar:
    """Build the app. Without a container, one is made for ``settings`` (and owns the database).

    A plugin host given here replaces the container's, for the engine too.
    Its ``check_pending()`` runs here: a set of plugins that must not serve
    stops startup.
    """
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
        app.state.api_keys = container.api_keys()
        app.state.run_tokens = container.run_tokens()
        app.state.runners = container.runners()
        app.state.run_engine = container.run_engine()
        await app.state.run_engine.start()
        try:
            yield
        finally:
            await app.state.run_engine.stop()
            await container.engine().dispose()
            if owns_container:
                container.shutdown_resources()

    api = Router(
        path="/api",
        route_handlers=[
            health,
            CompanyController,
            AgentController,
            IssueController,
            CommentController,
            RunController,
            PluginController,
            runner_connect,
        ],
    )
    app = Litestar(
        route_handlers=[api],
        guards=[authenticate],
        dependencies={
            "actor": Provide(current_actor, sync_to_thread=False),
            "companies": _service(container.companies),
            "agents": _service(container.agents),
            "issues": _service(container.issues),
            "comments": _service(container.comments),
            "wakes": _service(container.wakes),
            "runs": _service(container.runs),
            "plugin_host": Provide(lambda: host, sync_to_thread=False),
        },
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[lifespan],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="Paperclip",
            version=paperclip.__version__,
            path="/api/docs",
            render_plugins=[SwaggerRenderPlugin()],
        ),
        cors_config=None
        if settings.deployment_mode == "authenticated"
        else CORSConfig(allow_origins=[]),
        debug=False,
        logging_config=None,  # the process configures logging (paperclip.logging)
    )
    app.state.settings = settings
    app.state.container = container
    app.state.plugin_host = host
    return app
