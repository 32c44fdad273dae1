"""Costs and budgets in the run engine, in memory: a real PostgreSQL, the real engine, a clock moved by hand.

A runner reports each model response's usage (``usage``); the engine records
it once, prices it, charges it to the run's budgets, and holds what a spent
budget must not start, until the budget allows it again.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from paperclip_hookspecs import hookimpl
from sqlalchemy import func, select

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.domain.costs.budget_ledger import month_of
from paperclip.domain.costs.prices import Price
from paperclip.models import CostEvent, HoldStatus, Run, TaskHold
from paperclip.wire import messages as wire
from tests.engine.memory_world import call, eventually, finished, make_world, started

MODEL = "gpt-test"
# 2 USD a million input tokens, 0.5 cached, 8 output.
PRICE = Price(MODEL, 2_000_000, 500_000, 8_000_000)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Alerts:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    @hookimpl
    def paperclip_budget_alert(self, alert):
        self.seen.append((alert.level, alert.scope))


@pytest.fixture
async def costs(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    """A started engine on a clock the test moves, its budget keeper on a short pass."""
    clock = Clock(datetime(2026, 12, 15, 12, 0, tzinfo=UTC))
    alerts = Alerts()
    paperclip_register_plugin(alerts, name="alerts")
    world, engine = await make_world(
        paperclip_container,
        paperclip_plugin_host,
        paperclip_register_plugin,
        clock=clock,
        budget_sweep_seconds=0.05,
        lease_seconds=30.0,  # no run changes hands here: a starved loop must not lose one
    )
    world.clock, world.alerts = clock, alerts
    await paperclip_container.prices().put(LOCAL_OPERATOR, PRICE)
    await engine.start()
    try:
        yield world
    finally:
        await engine.stop()


def usage(start: wire.StartTurn, key: str, **fields) -> wire.Usage:
    fields.setdefault("model", MODEL)
    return wire.Usage(seq=0, run_id=start.run_id, turn=start.turn, key=key, **fields)


async def events_of(world, run_id: uuid.UUID) -> list[CostEvent]:
    async with world.container.sessions()() as session:
        rows = await session.execute(
            select(CostEvent).where(CostEvent.run_id == run_id).order_by(CostEvent.id)
        )
        return list(rows.scalars())


async def budget(world, scope: str, scope_id, limit: int, **options):
    view = await world.container.budgets().create(
        LOCAL_OPERATOR,
        world.company_id,
        scope=scope,
        scope_id=scope_id,
        monthly_limit_micros=limit,
        warn_percent=options.get("warn_percent", 80),
        run_reserve_micros=options.get("run_reserve_micros", 0),
        currency="USD",
    )
    return view.budget


async def active_holds(world) -> list[TaskHold]:
    async with world.container.sessions()() as session:
        rows = await session.execute(
            select(TaskHold).where(
                TaskHold.company_id == world.company_id, TaskHold.status == HoldStatus.ACTIVE
            )
        )
        return list(rows.scalars())


async def test_a_usage_reported_again_is_recorded_once_and_priced(costs):
    peer, _ = await costs.connect(await costs.new_runner())
    await costs.assign()
    start = await started(peer)

    first = usage(start, "resp-1", input_tokens=1000, cached_input_tokens=400, output_tokens=100)
    peer.send(first)
    peer.send(first)  # the same response's usage again (a replay after a reconnect)
    peer.send(usage(start, "resp-2", input_tokens=10, output_tokens=5, cost_micros=777))
    peer.send(usage(start, "resp-3", input_tokens=3, output_tokens=2, model="no-such-model"))
    recorded = await eventually(lambda: events_of(costs, start.run_id), lambda e: len(e) == 3)

    # 600 * 2 + 400 * 0.5 + 100 * 8 = 2200 micro-dollars; the provider's own cost wins.
    assert [(e.key, e.cost_micros, e.cost_source) for e in recorded] == [
        ("resp-1", 2200, "priced"),
        ("resp-2", 777, "provider"),
        ("resp-3", None, "unknown"),
    ]
    run, totals = await costs.container.runs().get_with_usage(costs.company_id, start.run_id)
    assert (totals.events, totals.input_tokens, totals.cost_micros, totals.unpriced_events) == (
        3,
        1013,
        2977,
        1,
    )
    assert run.budget_stop_at is None


async def test_a_turn_over_its_budget_stops_at_its_next_tool_call_and_the_task_waits(costs):
    limit = 3000
    agent_budget = await budget(costs, "agent", costs.agent_id, limit)
    peer, _ = await costs.connect(await costs.new_runner())
    issue_id = await costs.assign()
    start = await started(peer)
    assert not (await call(peer, start, "get_task_context")).is_error

    peer.send(usage(start, "r1", input_tokens=1250))  # 2500: past the warning, under the cap
    peer.send(usage(start, "r2", input_tokens=500))  # 3500: spent
    await eventually(lambda: costs.run(start.run_id), lambda r: r.budget_stop_at is not None)
    assert costs.alerts.seen == [("warning", "agent"), ("exceeded", "agent")]

    refused = await call(peer, start, "post_comment", body="still working")
    assert refused.is_error and refused.content["error"]["code"] == "budget_exceeded"
    assert "stop now" in refused.content["error"]["message"]
    peer.send(finished(start, answer="Stopped: the budget is spent."))
    run = await costs.until_ended(start.run_id)
    assert (run.status, run.error_code) == ("failed", "budget_exceeded")
    [hold] = await active_holds(costs)
    assert (hold.issue_id, hold.kind) == (issue_id, "budget_exceeded")

    # Raised: the keeper lets the task go on by itself, in a new run.
    await costs.container.budgets().update(
        LOCAL_OPERATOR, costs.company_id, agent_budget.id, {"monthly_limit_micros": 10_000}
    )
    again = await started(peer)
    assert again.run_id != start.run_id
    assert await active_holds(costs) == []


async def test_twenty_wakes_at_once_start_exactly_the_runs_the_budget_allows(costs):
    # Each run holds 1000 of the 5000 until its own costs replace it: five may start.
    company_budget = await budget(
        costs, "company", None, 5000, run_reserve_micros=1000, warn_percent=100
    )
    issues = [await costs.assign(f"Task {n}") for n in range(20)]
    peer, _ = await costs.connect(await costs.new_runner())
    starts = [await started(peer) for _ in range(5)]
    holds = await eventually(lambda: active_holds(costs), lambda h: len(h) == 15)
    assert {h.kind for h in holds} == {"budget_exceeded"}
    async with costs.container.sessions()() as session:
        running = await session.scalar(
            select(func.count()).select_from(Run).where(Run.issue_id.in_(issues))
        )
    assert running == 5
    view = await costs.container.budgets().get(costs.company_id, company_budget.id)
    assert (view.spent_micros, view.reserved_micros) == (0, 5000)

    # A run's cost replaces its reservation; its end gives back what is left.
    peer.send(usage(starts[0], "r1", input_tokens=250))  # 500 spent of its 1000
    peer.send(finished(starts[0], status="failed", error="done for now"))
    await costs.until_ended(starts[0].run_id)
    view = await costs.container.budgets().get(costs.company_id, company_budget.id)
    assert (view.spent_micros, view.reserved_micros) == (500, 4000)

    # Raised: every held task goes on.
    await costs.container.budgets().update(
        LOCAL_OPERATOR, costs.company_id, company_budget.id, {"monthly_limit_micros": 100_000}
    )
    more = {(await started(peer)).run_id for _ in range(15)}
    assert len(more) == 15 and await active_holds(costs) == []


async def test_a_new_month_releases_what_a_spent_budget_held(costs):
    costs.clock.now = datetime(2026, 12, 31, 22, 30, tzinfo=UTC)
    await budget(costs, "agent", costs.agent_id, 1000)
    peer, _ = await costs.connect(await costs.new_runner())
    await costs.assign("December")
    start = await started(peer)
    peer.send(usage(start, "r1", input_tokens=1000))  # 2000 of 1000: spent
    await eventually(lambda: costs.run(start.run_id), lambda r: r.budget_stop_at is not None)
    peer.send(finished(start, status="failed", error="stopped"))
    await costs.until_ended(start.run_id)
    later = await costs.assign("Still December")
    await eventually(lambda: active_holds(costs), lambda h: later in {x.issue_id for x in h})

    # An hour later it is January: the keeper's next pass lets both tasks go on.
    costs.clock.now += timedelta(hours=1, minutes=31)
    assert month_of(costs.clock.now, "UTC") == "2027-01"
    resumed = {(await started(peer)).run_id, (await started(peer)).run_id}
    assert len(resumed) == 2 and await active_holds(costs) == []


def test_a_budget_month_is_the_companys_calendar_month():
    new_year_in_paris = datetime(2026, 12, 31, 23, 30, tzinfo=UTC)  # 00:30 on Jan 1 there
    assert month_of(new_year_in_paris, "UTC") == "2026-12"
    assert month_of(new_year_in_paris, "Europe/Paris") == "2027-01"
    assert month_of(new_year_in_paris, "America/New_York") == "2026-12"
