"""``plain_connection``: a pooled asyncpg connection without a session, handed back only when sound."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest
from asyncpg.exceptions import InternalClientError

from paperclip.db.availability import describe, is_unavailable
from paperclip.db.driver import plain_connection


async def test_a_connection_goes_back_to_the_pool_and_is_used_again(paperclip_container):
    engine = paperclip_container.engine()
    async with plain_connection(engine) as first:
        assert await first.fetchval("SELECT 1") == 1
    async with plain_connection(engine) as second:
        assert second is first  # the pool's, not a new one
        assert not second.is_in_transaction()  # each statement committed on its own


async def test_a_cancelled_statement_does_not_hand_its_connection_back(paperclip_container):
    engine = paperclip_container.engine()
    started = asyncio.Event()
    used = []

    async def slow() -> None:
        async with plain_connection(engine) as connection:
            used.append(connection)
            started.set()
            await connection.execute("SELECT pg_sleep(30)")

    task = asyncio.create_task(slow())
    await started.wait()
    await asyncio.sleep(0.2)  # the statement is on the server
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert used[0].is_closed()
    async with plain_connection(engine) as next_one:
        assert next_one is not used[0]
        assert await next_one.fetchval("SELECT 1") == 1


async def test_a_connection_that_died_under_its_statement_is_discarded(paperclip_container):
    engine = paperclip_container.engine()
    async with plain_connection(engine) as killer:
        # Which error the driver raises depends on when the server's goodbye arrives.
        lost = (asyncpg.PostgresError, asyncpg.InterfaceError, InternalClientError, OSError)
        with pytest.raises(lost):
            async with plain_connection(engine) as victim:
                await killer.execute("SELECT pg_terminate_backend($1)", victim.get_server_pid())
                await victim.fetchval("SELECT 1")
    assert victim.is_closed()
    for _ in range(3):
        async with plain_connection(engine) as after:
            assert after is not victim
            assert await after.fetchval("SELECT 1") == 1


async def test_an_error_the_server_answered_leaves_the_connection_to_the_pool(paperclip_container):
    engine = paperclip_container.engine()
    with pytest.raises(asyncpg.exceptions.DivisionByZeroError):
        async with plain_connection(engine) as first:
            await first.fetchval("SELECT 1 / 0")
    async with plain_connection(engine) as second:
        assert second is first and await second.fetchval("SELECT 1") == 1


async def test_a_connection_the_full_pool_does_not_keep_is_closed_cleanly(
    paperclip_container, caplog
):
    # An overflow connection handed back to a full pool is closed, which the
    # asyncpg adapter can only do inside SQLAlchemy's greenlet.
    from paperclip.db.engine import create_engine

    engine = create_engine(paperclip_container.engine().url.render_as_string(False), pool_size=1)
    try:
        async with plain_connection(engine) as first, plain_connection(engine) as second:
            assert first is not second  # the second is the pool's overflow
        assert first.is_closed() != second.is_closed()  # one kept, one closed
        assert not [r for r in caplog.records if r.levelname == "ERROR"]
    finally:
        await engine.dispose()


async def test_a_goodbye_read_between_two_statements_counts_as_the_database_being_away(
    paperclip_container,
):
    # A server shutting down tells each idle connection so (FATAL 57P01), then
    # closes it. When asyncpg reads that message before the close, its next
    # statement fails with an InternalClientError (its protocol is out of step),
    # not a connection error: the database is away all the same, and the error
    # must say so rather than be logged with a traceback. Which error comes
    # depends on when the loop reads what: tried until the out-of-step one is seen.
    engine = paperclip_container.engine()
    raised: list[BaseException] = []
    for _ in range(100):
        async with plain_connection(engine) as killer:
            try:
                async with plain_connection(engine) as victim:
                    assert await victim.fetchval("SELECT 1") == 1
                    await killer.execute("SELECT pg_terminate_backend($1)", victim.get_server_pid())
                    # The loop stops, on purpose, while the goodbye and the close arrive.
                    time.sleep(0.2)  # noqa: ASYNC251
                    await asyncio.sleep(0)
                    await asyncio.sleep(0)
                    await victim.fetchval("SELECT 1")
            except Exception as exc:
                raised.append(exc)
        assert victim.is_closed()
        if isinstance(raised[-1], InternalClientError):
            break
    assert isinstance(raised[-1], InternalClientError), [type(e).__name__ for e in raised]
    assert "another operation" in str(raised[-1])
    unclassified = [describe(exc) for exc in raised if not is_unavailable(exc)]
    assert not unclassified
