"""Pytest fixtures for Paperclip and its plugins (registered through the ``pytest11`` entry point).

- ``postgres_admin_url`` (session): a PostgreSQL server. ``PAPERCLIP_TEST_DATABASE_URL``
  names one (any database on it; we create our own); otherwise one embedded server is
  started for the session, shared by pytest-xdist workers.
- ``database_url`` (module): a fresh, migrated database of its own for each test module.
- ``settings``, ``container``, ``app``, ``client``: the application on that database,
  built per test; ``client`` is an HTTP client speaking to it in-process.
- ``plugin_host``: a fresh plugin host with the built-in plugins only (no installed
  plugin is discovered); ``bare_plugin_host``: one with no plugin at all;
  ``installed_plugin_host``: built-ins and installed plugins, as the server finds them.
  ``register_plugin(obj)`` registers a plugin object (a module, an instance) on
  ``plugin_host`` for the test and unregisters it at teardown. ``app`` uses
  ``plugin_host``, so plugins registered before the app is built serve its requests.
- ``provider_run``: a real run of an installed provider through a control plane and a
  runner started as processes (:mod:`paperclip.testing_runs`).

Imports stay inside fixtures: this module is loaded by every pytest run in an
environment where Paperclip is installed.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import httpx
    from litestar import Litestar

    from paperclip.container import Container
    from paperclip.plugins import PluginHost, PluginRecord
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


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
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
def migrated_template(postgres_admin_url: str) -> str:
    """A database migrated to head, copied for each module. Named after the head it holds."""
    from paperclip.db import migrate

    name = f"paperclip_tpl_{migrate.head_revision()}_{_migrations_digest()}"
    asyncio.run(_build_template_once(postgres_admin_url, name))
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
def database_url(
    request: pytest.FixtureRequest, postgres_admin_url: str, migrated_template: str
) -> Iterator[str]:
    """A fresh migrated database for this test module, dropped afterwards."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    module = re.sub(r"[^a-z0-9]", "_", request.module.__name__.lower())[-30:]
    name = f"t_{worker}_{module}_{os.getpid()}"[:63]
    asyncio.run(
        _admin(
            postgres_admin_url,
            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
            f'CREATE DATABASE "{name}" TEMPLATE "{migrated_template}"',
        )
    )
    try:
        yield _with_database(postgres_admin_url, name)
    finally:
        asyncio.run(_admin(postgres_admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    from paperclip.settings import Settings

    return Settings(database_url=database_url, data_dir=tmp_path / "data", port=0)


@pytest.fixture
def container(settings: Settings) -> Iterator[Container]:
    from paperclip.container import Container

    container = Container(settings=settings)
    container.init_resources()
    try:
        yield container
    finally:
        container.shutdown_resources()


@pytest.fixture
def app(settings: Settings, container: Container, plugin_host: PluginHost) -> Litestar:
    from paperclip.app import create_app

    return create_app(settings, plugin_host, container=container)


@pytest.fixture
async def client(app: Litestar) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client for ``app``: in-process, on the test's own event loop, lifespan run.

    Sharing the loop lets a test use the app's engine (``container.sessions()``)
    between requests.
    """
    import httpx

    async with running_lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            yield http


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
def bare_plugin_host() -> PluginHost:
    """A fresh plugin host with the whole contract and no plugin registered."""
    from paperclip.plugins import PluginHost

    return PluginHost()


@pytest.fixture
def plugin_host() -> PluginHost:
    """A fresh plugin host with the built-in plugins only; installed plugins are not discovered.

    Override it (``def plugin_host(bare_plugin_host): return bare_plugin_host``)
    to start from no plugin at all.
    """
    from paperclip.plugins import PluginHost

    return PluginHost.with_builtins()


@pytest.fixture
def installed_plugin_host(tmp_path: Path) -> PluginHost:
    """A plugin host as ``paperclip serve`` builds it: built-ins and every installed plugin,
    with the ``PAPERCLIP_PLUGINS_*`` settings of the environment."""
    from paperclip.plugins import PluginHost
    from paperclip.settings import Settings

    return PluginHost.from_settings(Settings(data_dir=tmp_path / "data"))


@pytest.fixture
def register_plugin(plugin_host: PluginHost) -> Iterator[Callable[..., PluginRecord]]:
    """``register_plugin(obj, name=None)``: register ``obj`` on ``plugin_host`` for this test.

    Returns the plugin's record; raises if the plugin does not fit the contract.
    Every plugin registered this way is unregistered at teardown.
    """
    names: list[str] = []

    def register(plugin: object, name: str | None = None) -> PluginRecord:
        record = plugin_host.register(plugin, name=name)
        names.append(record.name)
        return record

    yield register
    for name in reversed(names):
        with suppress(KeyError):  # the test may have unregistered it itself
            plugin_host.unregister(name)


@pytest.fixture
def provider_run(database_url: str, tmp_path: Path) -> Iterator[Any]:
    """``provider_run(provider, provider_config=None, *, title=..., description=..., timeout=120)``:
    a real run of an installed provider, through a control plane and a runner started as
    processes on the test module's database, the run's tools served over the runner's MCP
    endpoint. Returns a :class:`paperclip.testing_runs.RunOutcome` (``status``, ``answer``,
    ``error_code``, ``run``, ``events``, ``comments``, ``issue``).

    ``provider_run.launch`` (``{provider: {profile: argv}}``) and ``provider_run.runner_env``
    may be set before the first run: the runner's launch profiles and extra environment.
    """
    from paperclip.testing_runs import RunStack

    stack = RunStack(database_url=database_url, folder=tmp_path / "provider-run")

    class ProviderRun:
        launch = None
        runner_env: dict[str, str] = {}

        def __call__(self, provider: str, provider_config: Any = None, **options: Any) -> Any:
            stack.launch = self.launch
            stack.runner_env = self.runner_env
            return stack.run(provider, provider_config, **options)

    try:
        yield ProviderRun()
    finally:
        stack.stop()
