"""Runs that start together spread over the connected runners (``Connections.pick_link``)."""

from __future__ import annotations

import asyncio

from paperclip.wire import messages as wire
from tests.support.memory import MemoryRunner


async def starts_of(peer: MemoryRunner) -> int:
    """How many runs this runner is sent, until none comes for a while."""
    count = 0
    while True:
        try:
            await peer.expect(wire.StartTurn, within=2)
        except TimeoutError:
            return count
        count += 1


async def test_runs_assigned_together_go_to_both_runners(world):
    first, _ = await world.connect(await world.new_runner())
    second, _ = await world.connect(await world.new_runner())
    for n in range(6):
        await world.assign(f"task {n}")
    counts = await asyncio.gather(starts_of(first), starts_of(second))
    assert sum(counts) == 6
    assert min(counts) >= 2, counts  # all on the first runner connected, before
