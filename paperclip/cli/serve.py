"""``paperclip serve``: database up, migrations applied, then the HTTP server until a signal."""

from __future__ import annotations

import functools
import logging
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path

import uvicorn
from litestar import Litestar

from paperclip import tracing
from paperclip.app import create_app, local_operator_token
from paperclip.cli.background import claim, default_files, release
from paperclip.cli.context import connection_problem, unreachable
from paperclip.cli.http_protocol import DeadlineProtocol
from paperclip.cli_kit.output import console, emit_json, fail
from paperclip.container import Container
from paperclip.db import migrate
from paperclip.db.access import EmbeddedDatabaseError
from paperclip.db.availability import describe, is_unavailable
from paperclip.local_runner import LocalRunner
from paperclip.logging import configure_logging
from paperclip.operator_token import board_url, token_file
from paperclip.plugin_host.errors import PluginError
from paperclip.plugin_host.seed_policies import warn_policies_off
from paperclip.settings import ConfigurationError, DeploymentMode, Settings

log = logging.getLogger(__name__)

GRACEFUL_SHUTDOWN_SECONDS = 30


def bind(host: str, port: int) -> socket.socket:
    """Bind before serving, so port 0 resolves to a real port we can print."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must say TCP: asyncio sets TCP_NODELAY only on sockets that do, and
    # without it small replies wait out the peer's delayed ACK (~40 ms each).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    """uvicorn that tells the run engine as soon as a stop begins.

    uvicorn waits (up to its grace) for open connections before the app's own
    shutdown runs; a runner connection waiting to adopt runs would hold the
    stop all that time, then be cancelled with a traceback. Told first, it
    gives up and closes, and the runner dials another replica.
    """

    def __init__(self, config: uvicorn.Config, on_stopping: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_stopping = on_stopping

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.on_stopping()
        await super().shutdown(sockets=sockets)


def _begin_stop(app: Litestar) -> None:
    engine = app.state.get("run_engine")  # absent when the app's startup did not get that far
    if engine is not None:
        engine.begin_stop()


class _Stop(Exception):
    """SIGTERM, delivered again by uvicorn after its graceful shutdown."""


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop


def serve(settings: Settings, *, as_json: bool = False, pid_file: Path | None = None) -> None:
    """Serve until a signal; with ``pid_file``, refuse while it names a running server, and
    name this process in it until the server stops."""
    if pid_file is None:
        _serve(settings, as_json)
        return
    claim(pid_file, default_files(settings.data_dir)[0])
    try:
        _serve(settings, as_json)
    finally:
        release(pid_file)


def _serve(settings: Settings, as_json: bool) -> None:
    configure_logging(settings.log_level, settings.log_format)
    tracing.configure(settings.instance_id)
    try:
        settings.check_bind_address()
    except ConfigurationError as exc:
        fail(str(exc), code=2)
    container = Container(settings=settings)
    try:
        # Before the database starts: a plugin set that must not serve stops here, clearly.
        container.plugin_host().check_pending()
    except PluginError as exc:
        fail(f"plugins: {exc}", hint="See `paperclip plugins` and docs/plugins/.", code=2)
    # A seed's recovery policy that is off serves, but says what a restart then loses.
    warn_policies_off(container.plugin_host())
    try:
        # Before the database starts too: a busy port is said at once.
        sock = bind(settings.host, settings.port)
    except OSError as exc:
        fail(
            f"cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}",
            hint="Another `paperclip serve` may be running there: stop it (`paperclip stop`, "
            "or its Ctrl-C), or choose another port with --port or PAPERCLIP_PORT (0 picks a "
            "free one).",
            code=2,
        )
    try:
        container.init_resources()
    except EmbeddedDatabaseError as exc:
        sock.close()
        fail(str(exc), code=2)
    try:
        # After the database's checks: a data dir refused there is left as it was found.
        try:
            operator_token = local_operator_token(settings)
        except ConfigurationError as exc:
            fail(str(exc), code=2)
        url = container.database_url()
        _migrate_when_reachable(url, settings)
        host, port = sock.getsockname()[:2]
        base_url = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
        app = create_app(settings, container=container)
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
            lifespan="on",
            # Runner messages are small JSON: compressing each costs more CPU than it saves.
            ws_per_message_deflate=False,
            # A request's head and body have deadlines: a client that dribbles bytes is closed.
            http=DeadlineProtocol.with_timeouts(
                settings.header_timeout_seconds, settings.body_timeout_seconds
            ),
        )
        server = _Server(config, functools.partial(_begin_stop, app))
        database = "external" if settings.database_url else f"embedded ({settings.pgdata})"
        local_runner: LocalRunner | None = None
        if settings.local_runner:
            local_runner = LocalRunner(settings.data_dir, base_url)
            local_runner.register(url)
        _say_listening(settings, base_url, database, operator_token, as_json)
        # uvicorn handles SIGINT and SIGTERM: stop accepting, finish in-flight requests.
        # It then raises the signal again for the handler installed before it; ours
        # turns that into an exception, so the database below is stopped too.
        previous = signal.signal(signal.SIGTERM, _raise_stop)
        try:
            if local_runner is not None:
                local_runner.start()
            server.run(sockets=[sock])
        except (_Stop, KeyboardInterrupt):
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
            if local_runner is not None:
                local_runner.stop()
    finally:
        container.shutdown_resources()
        log.info("stopped")


def _say_listening(
    settings: Settings, base_url: str, database: str, token: str | None, as_json: bool
) -> None:
    """The start line: where the server listens, and the board's URL that signs the operator
    in (with the token, without login); where the token is kept."""
    board = board_url(base_url, token)
    where = str(token_file(settings.data_dir)) if token else None
    local = settings.deployment_mode is DeploymentMode.LOCAL_TRUSTED
    if local and not settings.operator_token_required:
        log.warning(
            "the operator token is off (PAPERCLIP_OPERATOR_TOKEN_REQUIRED=false): every process "
            "and every user of this host acts as the operator"
        )
    if as_json:
        event = {"event": "listening", "url": base_url, "database": database, "board_url": board}
        emit_json(event | ({"token_file": where} if where else {}))
        return
    console.print(f"Paperclip is serving on [bold]{base_url}[/] (API under /api)")
    console.print(f"Board: {board}", soft_wrap=True, highlight=False, markup=False)
    if where:
        console.print(
            f'operator token: {where} (curl -H "Authorization: Bearer $(cat {where})")',
            style="dim",
            soft_wrap=True,
            highlight=False,
            markup=False,
        )
    console.print(f"[dim]database: {database}; stop with Ctrl-C[/]")


def _migrate_when_reachable(url: str, settings: Settings) -> None:
    """Migrate, waiting for a database that is away (a replica started during an outage,
    a PostgreSQL still starting): one log line, then a clear failure, never a traceback.
    One that refuses us (a password, a role, a database that is wrong) fails at once."""
    wait_seconds = settings.database_wait_seconds
    deadline = time.monotonic() + wait_seconds
    waiting = False
    while True:
        try:
            migrate.upgrade(url)
            return
        except Exception as exc:
            if not is_unavailable(exc):
                if (refused := connection_problem(exc)) is not None:
                    fail(unreachable(settings, refused), code=2)
                raise
            if time.monotonic() > deadline:
                fail(
                    f"the database is unavailable: {describe(exc)}",
                    hint=f"Waited {wait_seconds:g} s (PAPERCLIP_DATABASE_WAIT_SECONDS). "
                    "Check that PostgreSQL runs and that PAPERCLIP_DATABASE_URL names it.",
                    code=2,
                )
            if not waiting:
                log.warning("the database is unavailable (%s): waiting for it", describe(exc))
                waiting = True
            time.sleep(1)
