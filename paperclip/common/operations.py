"""What the database says about the whole instance, read when metrics are scraped.

Counts and sums over every company at once, with no company in any answer:
the figures an operator watches (runs by status, the journal's pending rows,
active holds, cost and tokens), never one company's data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

RUNS_BY_STATUS = text("SELECT status, count(*) FROM runs GROUP BY status")
TURNS_BY_STATUS = text("SELECT status, count(*) FROM run_turns GROUP BY status")
PENDING_CALLS = text("SELECT count(*) FROM tool_calls WHERE status = 'pending'")
HOLDS_BY_KIND = text("SELECT kind, count(*) FROM task_holds WHERE status = 'active' GROUP BY kind")
QUEUED_WAKES = text("SELECT count(*) FROM wake_requests WHERE status = 'queued'")
UNACKED_OUTBOX = text("SELECT count(*) FROM runner_outbox")
USAGE = text(
    "SELECT currency, coalesce(sum(input_tokens), 0), coalesce(sum(cached_input_tokens), 0),"
    " coalesce(sum(output_tokens), 0), coalesce(sum(reasoning_tokens), 0),"
    " coalesce(sum(cost_micros), 0) FROM cost_events GROUP BY currency"
)


@dataclass
class InstanceFigures:
    runs: dict[str, int] = field(default_factory=dict)
    turns: dict[str, int] = field(default_factory=dict)
    pending_calls: int = 0
    holds: dict[str, int] = field(default_factory=dict)
    queued_wakes: int = 0
    outbox: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    """By kind (input, cached_input, output, reasoning), over every currency."""
    cost_micros: dict[str, int] = field(default_factory=dict)
    """By currency."""


async def instance_figures(sessions: async_sessionmaker[AsyncSession]) -> InstanceFigures:
    """Every figure, read in one read-only transaction."""
    figures = InstanceFigures()
    async with sessions() as session, session.begin():
        await session.execute(text("SET TRANSACTION READ ONLY"))
        figures.runs = {s: n for s, n in (await session.execute(RUNS_BY_STATUS)).all()}
        figures.turns = {s: n for s, n in (await session.execute(TURNS_BY_STATUS)).all()}
        figures.pending_calls = int(await session.scalar(PENDING_CALLS) or 0)
        figures.holds = {k: n for k, n in (await session.execute(HOLDS_BY_KIND)).all()}
        figures.queued_wakes = int(await session.scalar(QUEUED_WAKES) or 0)
        figures.outbox = int(await session.scalar(UNACKED_OUTBOX) or 0)
        tokens = dict.fromkeys(("input", "cached_input", "output", "reasoning"), 0)
        for currency, *counts, cost in (await session.execute(USAGE)).all():
            for kind, count in zip(tokens, counts, strict=True):
                tokens[kind] += int(count)
            figures.cost_micros[currency] = int(cost)
        figures.tokens = tokens
    return figures
