"""Is the database away? Telling "PostgreSQL cannot be reached" from "this statement was wrong".

While PostgreSQL is down or restarting, the API answers 503 and the
background loops wait and retry; each says so in one log line, without a
traceback, because nothing is wrong with the code.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from asyncpg.exceptions import InterfaceError as AsyncpgInterfaceError
from asyncpg.exceptions import InternalClientError, PostgresConnectionError
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from paperclip.metrics import DATABASE_ERRORS

T = TypeVar("T")


def is_unavailable(exc: BaseException) -> bool:
    """Whether an error means the database is away, not that a statement was wrong."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, StatementError):
        # A DBAPIError, or a statement whose connection could not be made again
        # (its reconnect refused): the driver's own error says which.
        exc = exc.orig or exc
    sqlstate = getattr(exc, "sqlstate", None) or ""
    # 08: connection exception; 57P: operator intervention (shutdown, cannot connect now).
    if sqlstate.startswith(("08", "57P")) or isinstance(
        exc, (PostgresConnectionError, AsyncpgInterfaceError, PoolTimeoutError)
    ):
        return True
    # A server shutting down says goodbye (FATAL 57P01) to each idle connection, then
    # closes it. When asyncpg reads the goodbye between two statements, before the close,
    # its next statement fails with an InternalClientError (its protocol is out of step
    # with the server's) rather than a connection error. SQLAlchemy's adapter keeps it
    # as the cause of its own error.
    if isinstance(exc, InternalClientError) or isinstance(exc.__cause__, InternalClientError):
        return True
    # Connecting raises plain OSErrors (a refused port, a missing socket file): they are the
    # database's when asyncpg raised them.
    return isinstance(exc, OSError) and _raised_in(exc, "asyncpg")


def _raised_in(exc: BaseException, package: str) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__", "").startswith(package):
            return True
        tb = tb.tb_next
    return False


def describe(exc: BaseException) -> str:
    """One line for a log: the error's type and first line."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"


def log_failure(log: logging.Logger, message: str, exc: BaseException, *args: object) -> None:
    """Log a background failure: one warning line when the database is away, else the traceback."""
    if is_unavailable(exc):
        DATABASE_ERRORS.labels("unavailable").inc()
        log.warning(message + " (the database is unavailable: %s)", *args, describe(exc))
    else:
        DATABASE_ERRORS.labels("other").inc()
        log.error(message, *args, exc_info=exc)


async def when_reachable(
    read: Callable[[], Awaitable[T]], wait_seconds: float, log: logging.Logger
) -> T:
    """``read()``, tried again each second while the database is away, for up to
    ``wait_seconds`` (then its error goes up); one log line when the waiting starts."""
    deadline = time.monotonic() + wait_seconds
    waiting = False
    while True:
        try:
            return await read()
        except Exception as exc:
            if not is_unavailable(exc) or time.monotonic() > deadline:
                raise
            if not waiting:
                log.warning("the database is unavailable (%s): waiting for it", describe(exc))
                waiting = True
        await asyncio.sleep(1)


class PoolCloseFailures(logging.Filter):
    """SQLAlchemy's pool logs a connection it could not close with a traceback (``Exception
    closing connection``, at ``error``). When the database is away (killed, restarting), that
    is a broken pipe, not a defect: one warning line instead, as our own loops say it."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and is_unavailable(exc):
            record.msg = "a pool connection was not closed (the database is unavailable: %s)"
            record.args = (describe(exc),)
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def quiet_pool_close_failures(pool: object) -> None:
    """Give the logger of ``pool``'s class (SQLAlchemy names it so) the filter above, once."""
    cls = type(pool)
    logger = logging.getLogger(f"{cls.__module__}.{cls.__name__}")
    if not any(isinstance(f, PoolCloseFailures) for f in logger.filters):
        logger.addFilter(PoolCloseFailures())
