"""What every command needs: the settings, and the database for the length of one command.

A mistake in the configuration is said in one line, naming the variable, what
it expects and what to do; so is a database that cannot be reached. Neither
is a traceback: nothing is wrong with the code.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_settings import SettingsError

from paperclip.cli.output import fail
from paperclip.settings import Settings

T = TypeVar("T")

SETTINGS_HINT = "Fix or unset it; docs/configuration.md lists every setting."
JSON_SETTINGS = {
    "runner_launch": 'JSON such as {"codex": {"default": ["codex", "app-server"]}}: '
    "provider, then profile name, then command line",
    "runner_models": 'JSON such as {"local": {"endpoints": ["http://127.0.0.1:8765/v1"], '
    '"keys": ["MODEL_API_KEY"]}}: profile name, then what it allows',
}
"""What a setting whose value is JSON looks like, for the message when it does not parse."""


def load_settings(**overrides: Any) -> Settings:
    """The settings from ``PAPERCLIP_*`` (and ``overrides``), or one line saying which is wrong."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        fail("; ".join(_problem(error) for error in exc.errors()), hint=SETTINGS_HINT)
    except SettingsError as exc:
        fail(_unparsed(exc), hint=SETTINGS_HINT)


def variable(field: str) -> str:
    """The environment variable of a setting."""
    return f"{Settings.model_config.get('env_prefix', '')}{field}".upper()


def _problem(error: Any) -> str:
    field, *inside = (str(part) for part in error["loc"])
    message = re.sub(r"^(Value error|Assertion failed), ", "", error["msg"])
    where = f" at {'.'.join(inside)}" if inside else ""
    expects = f" (expected: {JSON_SETTINGS[field]})" if field in JSON_SETTINGS else ""
    return f"{variable(field)}{where}: {message}{expects}"


def _unparsed(exc: SettingsError) -> str:
    # pydantic-settings says 'error parsing value for field "runner_launch" ...', the JSON
    # decoder's own error being its cause.
    found = re.search(r'field "(\w+)"', str(exc))
    if found is None:
        return f"invalid settings: {exc}"
    field = found.group(1)
    cause = exc.__cause__
    detail = f": {cause}" if isinstance(cause, json.JSONDecodeError) else ""
    expected = JSON_SETTINGS.get(field, "JSON")
    return f"{variable(field)} is not valid JSON{detail}; expected {expected}"


def connection_problem(exc: BaseException) -> str | None:
    """What keeps the database out of reach, in one line; None for any other error.

    Away (refused, no such host, timed out, shutting down), or refusing us (a
    password, a role or a database that is wrong): configuration, not code.
    """
    from sqlalchemy.exc import DBAPIError

    from paperclip.db.availability import describe, is_unavailable

    if is_unavailable(exc):
        return describe(exc)
    original = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    # 28: invalid authorization (password, role); 3D000: no such database.
    sqlstate = getattr(original, "sqlstate", None) or ""
    if sqlstate.startswith("28") or sqlstate == "3D000":
        return str(original).splitlines()[0]  # PostgreSQL's own words say it all
    return None


def unreachable(settings: Settings, problem: str) -> str:
    """The one line for a database that cannot be used: where, why, and what to do."""
    if settings.database_url:
        from sqlalchemy.engine import make_url

        where = make_url(settings.database_url).render_as_string(hide_password=True)
        todo = (
            "Check that PostgreSQL runs there and accepts this user, or fix "
            "PAPERCLIP_DATABASE_URL (unset: the embedded PostgreSQL)."
        )
    else:
        where = f"the embedded PostgreSQL in {settings.pgdata}"
        todo = "See `paperclip doctor`."
    return f"cannot use the database at {where}: {problem}. {todo}"


@contextmanager
def database_errors(settings: Settings) -> Iterator[None]:
    """A database out of reach inside the block ends the command with one line (exit 2)."""
    try:
        yield
    except Exception as exc:
        problem = connection_problem(exc)
        if problem is None:
            raise
        fail(unreachable(settings, problem), code=2)


def start_database(settings: Settings) -> Any:
    """A container with its database up, or a clear refusal (exit 2)."""
    from paperclip.container import Container
    from paperclip.db.access import EmbeddedDatabaseError

    container = Container(settings=settings)
    try:
        container.init_resources()
    except EmbeddedDatabaseError as exc:
        fail(str(exc), code=2)
    return container


def with_database(settings: Settings, work: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``work(container)`` with the database up, then stop what was started."""
    from paperclip.db import migrate

    container = start_database(settings)
    try:
        with database_errors(settings):
            migrate.upgrade(container.database_url())

            async def run() -> T:
                from paperclip.container import close_pools

                try:
                    return await work(container)
                finally:
                    await close_pools(container)

            return asyncio.run(run())
    finally:
        container.shutdown_resources()
