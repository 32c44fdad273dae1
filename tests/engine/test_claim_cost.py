"""What a wake's claim and a turn's end cost the server: statements, transactions, CPU.

Through the real scheduler and the real turn end, one wake per pass (as
``bench/wake_latency.py`` sends them), then one pass of 20. The counts are
exact and asserted; the CPU (``time.process_time`` around each call: this
process only, not PostgreSQL's) is printed, not asserted, as a machine
shared with others makes it vary::

    PAPERCLIP_CLAIM_COST_CLAIMS=200 pytest tests/engine/test_claim_cost.py -q -s

prints one line, ``claim cost: {...}`` (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time

from paperclip.wire import messages as wire
from tests.engine.memory_world import started
from tests.engine.test_claim_statements import (
    ENDING_TABLES,
    STATEMENTS_PER_PASS,
    STATEMENTS_PER_TURN_END,
    engines,
    looks,
    passes,
)
from tests.support.statements import statements_of

CLAIMS = int(os.environ.get("PAPERCLIP_CLAIM_COST_CLAIMS", "20"))
BATCH = 20


def ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered) * 1000, 2),
        "p90": round(ordered[int(len(ordered) * 0.9)] * 1000, 2),
    }


async def test_what_a_claim_and_a_turn_end_cost(quiet_world):
    world = quiet_world
    endings = world.engine.endings
    original = endings.turn_finished
    ends: list[tuple[float, int]] = []
    ended = asyncio.Event()

    async def timed(link, message):
        async with statements_of(*engines(world)) as sent:
            began = time.process_time()
            await original(link, message)
            spent = time.process_time() - began
        ends.append((spent, len([s for s in sent.statements if ENDING_TABLES.search(s)])))
        ended.set()

    endings.turn_finished = timed
    claims: list[tuple[float, int, int, int]] = []
    for n in range(CLAIMS + 5):  # the first few warm the pools' connections
        await world.assign(f"Fix the build {n}")
        async with statements_of(*engines(world)) as sent:
            began = time.process_time()
            assert await world.engine.claim_wakes() == 1
            spent = time.process_time() - began
        claims.append((spent, len(passes(sent)) - looks(sent), sent.transactions, looks(sent)))
        start = await started(world.peer)
        ended.clear()
        world.peer.send(wire.TurnFinished(seq=0, run_id=start.run_id, status="failed", error="x"))
        await asyncio.wait_for(ended.wait(), 30)
    claims, ends = claims[5:], ends[5:]

    for n in range(BATCH):
        await world.assign(f"Fix the tests {n}")
    async with statements_of(*engines(world)) as batch:
        began = time.process_time()
        assert await world.engine.claim_wakes() == BATCH
        batch_cpu = time.process_time() - began

    figures = {
        "claims": len(claims),
        "statements_per_claim": max(c[1] for c in claims),
        # The slow poll's look for queued turns of lost runs (every RESUME_POLL_SECONDS).
        "passes_that_looked_for_resumptions": sum(1 for c in claims if c[3]),
        # A runner link's own transaction (its position saved) may fall in a pass's time.
        "transactions_per_claim": round(statistics.median(c[2] for c in claims)),
        "claim_cpu_ms": ms([c[0] for c in claims]),
        "turn_end_statements": max(e[1] for e in ends),
        "turn_end_cpu_ms": ms([e[0] for e in ends]),
        "pass_of_20_statements": len(passes(batch)) - looks(batch),
        "pass_of_20_cpu_ms_per_claim": round(batch_cpu * 1000 / BATCH, 2),
    }
    print("claim cost:", json.dumps(figures))
    assert figures["statements_per_claim"] <= STATEMENTS_PER_PASS
    assert figures["transactions_per_claim"] == 1
    assert figures["turn_end_statements"] <= STATEMENTS_PER_TURN_END
    assert figures["pass_of_20_statements"] <= STATEMENTS_PER_PASS
