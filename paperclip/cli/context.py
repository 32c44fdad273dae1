"""What a command that opens the database needs: the database for the length of one command.

A database that cannot be reached is said in one line, as a mistake in the
configuration is (``paperclip/cli_kit/settings.py``), not as a traceback:
nothing is wrong with the code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from paperclip.cli_kit.output import fail
from paperclip.settings import Settings

T = TypeVar("T")


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
