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
