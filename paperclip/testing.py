"""Pytest fixtures for Paperclip and its plugins (registered through the ``pytest11`` entry point).

Every fixture's name starts with ``paperclip_``, so none clashes with another
pytest plugin's:

- ``paperclip_postgres_url`` (session): a PostgreSQL server. ``PAPERCLIP_TEST_DATABASE_URL``
  names one (any database on it; we create our own); otherwise one embedded server is
  started for the session, shared by pytest-xdist workers.
- ``paperclip_database_url`` (module): a fresh, migrated database of its own for each
  test module.
- ``paperclip_settings``, ``paperclip_container``, ``paperclip_app``, ``paperclip_client``:
  the application on that database, built per test; ``paperclip_client`` is an HTTP
  client speaking to it in-process, as the operator (``operator_headers(app)``: the
  operator token, without login).
- ``paperclip_plugin_host``: a fresh plugin host with the built-in plugins only (no
  installed plugin is discovered); ``paperclip_bare_plugin_host``: one with no plugin at
  all; ``paperclip_installed_plugin_host``: built-ins and installed plugins, as the server
  finds them. ``paperclip_register_plugin(obj)`` registers a plugin object (a module, an
  instance) on ``paperclip_plugin_host`` for the test and unregisters it at teardown.
  ``paperclip_app`` uses ``paperclip_plugin_host``, so plugins registered before the app
  is built serve its requests.
- ``paperclip_provider_run``: a real run of an installed provider through a control plane
  and a runner started as processes (:mod:`paperclip.testing_runs`).

The names before 0.2 (``client``, ``app``, ``plugin_host``, ...) still work, with a
``PaperclipDeprecationWarning``, until 0.3. Overriding an old name does not change
the new fixtures: override the new one.

Imports stay inside fixtures: this module is loaded by every pytest run in an
environment where Paperclip is installed.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import httpx
    from litestar import Litestar

    from paperclip.container import Container
    from paperclip.plugin_host import PluginHost, PluginRecord
    from paperclip.settings import Settings

TEMPLATE_LOCK_ID = 0x5043_0001  # advisory lock key guarding the template's creation


def _default_pgdata() -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    # Not under /root: the embedded server's own user must traverse every parent.
    return Path(os.environ.get("PAPERCLIP_TEST_PGDATA", f"/var/tmp/paperclip-test-{uid}/pgdata"))


def _with_database(url: str, name: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=name).render_as_string(hide_password=False)


async def connect(url: str) -> Any:
    """A raw asyncpg connection to any PostgreSQL URL (with the embedded server's socket in ?host=)."""
    import asyncpg  # type: ignore[import-untyped]
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    return await asyncpg.connect(
        user=parsed.username,
        password=parsed.password or None,
        database=parsed.database,
        host=parsed.query.get("host", parsed.host),
        port=parsed.port,
    )


async def _admin(url: str, *statements: str) -> list[Any]:
    conn = await connect(url)
    try:
        return [await conn.fetch(s) for s in statements]
    finally:
        await conn.close()


@contextmanager
def scratch_database(server_url: str, name: str) -> Iterator[str]:
    """An empty database ``name`` on the server of ``server_url`` (one left by an earlier
    session is dropped first), its URL; dropped afterwards. For tests outside an event loop
    (Alembic's async environment runs its own)."""
    drop = f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
    asyncio.run(_admin(server_url, drop, f'CREATE DATABASE "{name}"'))
    try:
        yield _with_database(server_url, name)
    finally:
        asyncio.run(_admin(server_url, drop))


@pytest.fixture(scope="session")
def paperclip_postgres_url() -> Iterator[str]:
    """A URL of the PostgreSQL server the tests use, on its ``postgres`` database."""
    configured = os.environ.get("PAPERCLIP_TEST_DATABASE_URL")
    if configured:
        yield _with_database(configured, "postgres")
        return
    from paperclip.db.embedded import EmbeddedPostgres

    embedded = EmbeddedPostgres(_default_pgdata())
    url = embedded.start()
    try:
        yield _with_database(url, "postgres")
    finally:
        embedded.stop()


@pytest.fixture(scope="session")
def paperclip_template(paperclip_postgres_url: str) -> str:
    """A database migrated to head, copied for each module. Named after the head it holds."""
    from paperclip.db import migrate

    name = f"paperclip_tpl_{migrate.head_revision()}_{_migrations_digest()}"
    asyncio.run(_build_template_once(paperclip_postgres_url, name))
    return name


async def _build_template_once(admin_url: str, name: str) -> None:
    """Build the template unless it exists, holding an advisory lock the whole time.

    pytest-xdist workers share the server: one builds, the others wait on the
    lock and then find the template.
    """
    from paperclip.db import migrate

    conn = await connect(admin_url)
    try:
        await conn.execute(f"SELECT pg_advisory_lock({TEMPLATE_LOCK_ID})")
        if await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            return
        building = f"{name}_building"
        await conn.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{building}"')
        # Alembic runs its own event loop: give it a thread of its own.
        await asyncio.to_thread(migrate.upgrade, _with_database(admin_url, building))
        await conn.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
        await conn.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE true')
    finally:
        await conn.close()  # releases the lock


def _migrations_digest() -> str:
    from paperclip.db.migrate import migrations_dir

    digest = hashlib.sha256()
    for path in sorted(migrations_dir().rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


@pytest.fixture(scope="module")
def paperclip_database_url(
    request: pytest.FixtureRequest, paperclip_postgres_url: str, paperclip_template: str
) -> Iterator[str]:
    """A fresh migrated database for this test module, dropped afterwards."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    module = re.sub(r"[^a-z0-9]", "_", request.module.__name__.lower())[-30:]
    name = f"t_{worker}_{module}_{os.getpid()}"[:63]
    asyncio.run(
        _admin(
            paperclip_postgres_url,
            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
            f'CREATE DATABASE "{name}" TEMPLATE "{paperclip_template}"',
        )
    )
    try:
        yield _with_database(paperclip_postgres_url, name)
    finally:
        asyncio.run(
            _admin(paperclip_postgres_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        )


@pytest.fixture
def paperclip_settings(paperclip_database_url: str, tmp_path: Path) -> Settings:
    from paperclip.settings import Settings

    return Settings(database_url=paperclip_database_url, data_dir=tmp_path / "data", port=0)


@pytest.fixture
async def paperclip_container(paperclip_settings: Settings) -> AsyncIterator[Container]:
    from paperclip.container import Container, close_pools

    container = Container(settings=paperclip_settings)
    container.init_resources()
    try:
        yield container
    finally:
        # On the test's loop, where its connections were opened: left open, each test's pool
        # would hold its connections until the module's database is dropped.
        await close_pools(container)
        container.shutdown_resources()


@pytest.fixture
def paperclip_app(
    paperclip_settings: Settings,
    paperclip_container: Container,
    paperclip_plugin_host: PluginHost,
) -> Litestar:
    from paperclip.app import create_app

    return create_app(paperclip_settings, paperclip_plugin_host, container=paperclip_container)


@pytest.fixture
async def paperclip_client(paperclip_app: Litestar) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client for ``app``: in-process, on the test's own event loop, lifespan run.

    Sharing the loop lets a test use the app's engine (``paperclip_container.sessions()``)
    between requests.
    """
    import httpx

    async with running_lifespan(paperclip_app):
        transport = httpx.ASGITransport(app=paperclip_app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://127.0.0.1",
            headers=operator_headers(paperclip_app),
        ) as http:
            yield http


def operator_headers(app: Litestar) -> dict[str, str]:
    """``Authorization`` with the app's operator token, without login (none with login, or with
    the token turned off): what the local operator's clients send."""
    token = app.state.get("operator_token")
    return {"Authorization": f"Bearer {token}"} if token else {}


@asynccontextmanager
async def running_lifespan(app: Litestar) -> AsyncIterator[None]:
    """Run the app's lifespan in a task of its own.

    Its cancel scopes must be entered and left by one task, and a fixture's
    setup and teardown may run in different ones.
    """
    started, stop = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with app.lifespan():
            started.set()
            await stop.wait()

    task = asyncio.create_task(hold())
    waiter = asyncio.create_task(started.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()  # startup failed: raise its error
    try:
        yield
    finally:
        stop.set()
        await task


@pytest.fixture
def paperclip_bare_plugin_host() -> PluginHost:
    """A fresh plugin host with the whole contract and no plugin registered."""
    from paperclip.plugin_host import PluginHost

    return PluginHost()


@pytest.fixture
def paperclip_plugin_host() -> PluginHost:
    """A fresh plugin host with the built-in plugins only; installed plugins are not discovered.

    Override it (``def paperclip_plugin_host(paperclip_bare_plugin_host): return
    paperclip_bare_plugin_host``) to start from no plugin at all.
    """
    from paperclip.plugin_host import PluginHost

    return PluginHost.with_builtins()


@pytest.fixture
def paperclip_installed_plugin_host(tmp_path: Path) -> PluginHost:
    """A plugin host as ``paperclip serve`` builds it: built-ins and every installed plugin,
    with the ``PAPERCLIP_PLUGINS_*`` settings of the environment."""
    from paperclip.plugin_host import PluginHost
    from paperclip.settings import Settings

    return PluginHost.from_settings(Settings(data_dir=tmp_path / "data"))


@pytest.fixture
def paperclip_register_plugin(
    paperclip_plugin_host: PluginHost,
) -> Iterator[Callable[..., PluginRecord]]:
    """``register_plugin(obj, name=None)``: register ``obj`` on ``plugin_host`` for this test.

    Returns the plugin's record; raises if the plugin does not fit the contract.
    Every plugin registered this way is unregistered at teardown.
    """
    names: list[str] = []

    def register(plugin: object, name: str | None = None) -> PluginRecord:
        record = paperclip_plugin_host.register(plugin, name=name)
        names.append(record.name)
        return record

    yield register
    for name in reversed(names):
        with suppress(KeyError):  # the test may have unregistered it itself
            paperclip_plugin_host.unregister(name)


@pytest.fixture
def paperclip_provider_run(paperclip_database_url: str, tmp_path: Path) -> Iterator[Any]:
    """``paperclip_provider_run(provider, provider_config=None, *, title=..., description=..., timeout=120)``:
    a real run of an installed provider, through a control plane and a runner started as
    processes on the test module's database, the run's tools served over the runner's MCP
    endpoint. Returns a :class:`paperclip.testing_runs.RunOutcome` (``status``, ``answer``,
    ``error_code``, ``run``, ``events``, ``comments``, ``issue``).

    ``paperclip_provider_run.launch`` (``{provider: {profile: argv}}``) and
    ``paperclip_provider_run.runner_env`` are the runner's launch profiles and extra
    environment. The processes start at the test's first run and serve all of its runs, so
    both are set before the first run; changing them afterwards raises. Each test gets its
    own processes (and its own settings), on the module's database.
    """
    from paperclip.testing_runs import RunStack

    stack = RunStack(database_url=paperclip_database_url, folder=tmp_path / "provider-run")

    class ProviderRun:
        def __init__(self) -> None:
            self.launch: dict[str, dict[str, list[str]]] | None = None
            self.runner_env: dict[str, str] = {}

        def __call__(self, provider: str, provider_config: Any = None, **options: Any) -> Any:
            wanted = (self.launch, dict(self.runner_env))
            if stack.url and wanted != (stack.launch, dict(stack.runner_env)):
                raise RuntimeError(
                    "paperclip_provider_run.launch and .runner_env are read when the test's "
                    "processes start, at its first run: set them before it"
                )
            stack.launch, stack.runner_env = wanted
            return stack.run(provider, provider_config, **options)

    try:
        yield ProviderRun()
    finally:
        stack.stop()


# The names before 0.2, until 0.3.


class PaperclipDeprecationWarning(DeprecationWarning):
    """Something of Paperclip's test kit that goes away in a later minor version."""


def _deprecated(old: str, new: str, scope: Any = "function") -> Any:
    @pytest.fixture(name=old, scope=scope)
    def alias(request: pytest.FixtureRequest) -> Any:
        warnings.warn(
            f"the fixture {old!r} is deprecated and goes in 0.3: use {new!r}",
            PaperclipDeprecationWarning,
            stacklevel=2,
        )
        return request.getfixturevalue(new)

    alias.__doc__ = f"Deprecated: use ``{new}``."
    return alias


postgres_admin_url = _deprecated("postgres_admin_url", "paperclip_postgres_url", "session")
migrated_template = _deprecated("migrated_template", "paperclip_template", "session")
database_url = _deprecated("database_url", "paperclip_database_url", "module")
settings = _deprecated("settings", "paperclip_settings")
container = _deprecated("container", "paperclip_container")
app = _deprecated("app", "paperclip_app")
client = _deprecated("client", "paperclip_client")
bare_plugin_host = _deprecated("bare_plugin_host", "paperclip_bare_plugin_host")
plugin_host = _deprecated("plugin_host", "paperclip_plugin_host")
installed_plugin_host = _deprecated("installed_plugin_host", "paperclip_installed_plugin_host")
register_plugin = _deprecated("register_plugin", "paperclip_register_plugin")
