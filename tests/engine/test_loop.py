"""The background keepers' loop: a failed pass is one log line and the loop goes on."""

from __future__ import annotations

import asyncio
import logging

import pytest

from paperclip.engine.loop import keep_running

log = logging.getLogger("tests.loop")


async def test_a_failing_pass_is_logged_once_and_the_next_pass_runs(caplog):
    passes: list[int] = []
    third = asyncio.Event()

    async def one_pass() -> None:
        passes.append(len(passes))
        if len(passes) == 1:
            raise RuntimeError("the database is away")
        if len(passes) == 3:
            third.set()

    caplog.set_level(logging.INFO, logger="tests.loop")
    task = asyncio.create_task(keep_running(one_pass, every=0, log=log, failure="a pass failed"))
    await asyncio.wait_for(third.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    failures = [r for r in caplog.records if r.getMessage().startswith("a pass failed")]
    assert len(failures) == 1 and failures[0].levelno == logging.ERROR  # not "unavailable"


async def test_a_nudge_ends_the_wait_and_until_next_sets_it():
    nudge = asyncio.Event()
    passes = 0
    second = asyncio.Event()
    waiting = asyncio.Event()

    async def one_pass() -> None:
        nonlocal passes
        passes += 1
        if passes == 2:
            second.set()

    async def until_next() -> float:
        waiting.set()
        return 3600.0  # an hour: only the nudge brings the next pass

    task = asyncio.create_task(
        keep_running(one_pass, every=3600, until_next=until_next, nudge=nudge, log=log, failure="x")
    )
    await asyncio.wait_for(waiting.wait(), 10)  # the first pass is done
    assert passes == 1
    nudge.set()
    await asyncio.wait_for(second.wait(), 10)
    assert not nudge.is_set()  # cleared for the next wait
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
