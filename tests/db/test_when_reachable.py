"""A read at start waits for a database that is away, and only for that."""

from __future__ import annotations

import logging
import socket

import asyncpg
import pytest
from sqlalchemy.exc import StatementError

from paperclip.db.availability import is_unavailable, when_reachable

log = logging.getLogger("test")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there once closed


async def refused() -> None:
    await asyncpg.connect(host="127.0.0.1", port=closed_port(), user="x", timeout=5)


async def test_a_read_is_tried_again_while_the_database_is_away(caplog):
    tries = []

    async def read() -> str:
        tries.append(1)
        if len(tries) < 3:
            await refused()  # a real refused connection, as while PostgreSQL restarts
        return "secret"

    with caplog.at_level(logging.WARNING, logger="test"):
        assert await when_reachable(read, 30, log) == "secret"
    assert len(tries) == 3
    # One line when the waiting starts, not one per try; no traceback.
    [record] = caplog.records
    assert record.getMessage().startswith("the database is unavailable (")
    assert record.exc_info is None


async def test_past_the_wait_the_error_goes_up():
    with pytest.raises(OSError) as raised:
        await when_reachable(refused, 0, log)
    assert is_unavailable(raised.value)


async def test_an_error_that_is_not_the_database_being_away_goes_up_at_once():
    tries = []

    async def read() -> None:
        tries.append(1)
        raise ValueError("a wrong statement")

    with pytest.raises(ValueError):
        await when_reachable(read, 30, log)
    assert tries == [1]


async def test_a_statement_whose_reconnect_is_refused_is_the_database_being_away():
    # SQLAlchemy reconnects an invalidated connection when its next statement runs; a
    # refused reconnect comes up as a StatementError around the driver's OSError.
    with pytest.raises(OSError) as raised:
        await refused()
    wrapped = StatementError("(ConnectionRefusedError)", "SELECT 1", {}, raised.value)
    assert is_unavailable(wrapped)
    assert not is_unavailable(StatementError("wrong", "SELECT 1", {}, ValueError("bad")))


async def test_the_pool_says_in_one_line_that_it_could_not_close_a_connection_to_a_database_away(
    caplog,
):
    from paperclip.db.engine import create_engine

    engine = create_engine("postgresql://x@127.0.0.1:1/x")  # never connected: only its pool
    pool_log = logging.getLogger("sqlalchemy.pool.impl.AsyncAdaptedQueuePool")
    with caplog.at_level(logging.WARNING, logger=pool_log.name):
        for error in (refused, _wrong):
            try:
                await error()
            except Exception:
                # As the pool logs a close that failed (sqlalchemy/pool/base.py).
                pool_log.error("Exception closing connection %r", "<connection>", exc_info=True)
    await engine.dispose()
    away, wrong = caplog.records
    assert away.levelno == logging.WARNING and away.exc_info is None
    assert away.getMessage().startswith("a pool connection was not closed (the database is")
    # Anything else keeps SQLAlchemy's line and its traceback.
    assert wrong.levelno == logging.ERROR and wrong.exc_info is not None


async def _wrong() -> None:
    raise ValueError("not the database")
