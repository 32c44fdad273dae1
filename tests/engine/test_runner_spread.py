"""Runs that start together spread over the connected runners (``Connections.pick_link``)."""

from __future__ import annotations

import asyncio

from paperclip.wire import messages as wire
from tests.support.memory import MemoryRunner


async def count_starts(peers: list[MemoryRunner], total: int) -> list[int]:
    """How many runs each runner is sent, once ``total`` have been sent in all."""
    counts = [0] * len(peers)

    async def receive(index: int) -> None:
        while True:
            await peers[index].expect(wire.StartTurn, within=60)
            counts[index] += 1
            if sum(counts) == total:
                return

    tasks = [asyncio.create_task(receive(i)) for i in range(len(peers))]
    try:
        await asyncio.wait(tasks, timeout=60, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return counts


async def test_runs_assigned_together_go_to_both_runners(world):
    first, _ = await world.connect(await world.new_runner())
    second, _ = await world.connect(await world.new_runner())
    for n in range(6):
        await world.assign(f"task {n}")
    counts = await count_starts([first, second], 6)
    assert sum(counts) == 6, counts
    assert min(counts) >= 2, counts  # all on the first runner connected, before


async def test_runs_assigned_one_at_a_time_take_turns(world):
    # A pass that finds nothing to claim (here an extra one after each start) must not
    # move the rotation: one that did sent runs claimed alone in their pass to one runner.
    first, _ = await world.connect(await world.new_runner())
    second, _ = await world.connect(await world.new_runner())
    counts = [0, 0]
    for n in range(4):
        await world.assign(f"task {n}")
        started = await count_starts([first, second], 1)
        counts = [a + b for a, b in zip(counts, started, strict=True)]
        assert await world.engine.scheduler.claim_wakes() == 0
    assert counts == [2, 2], counts
