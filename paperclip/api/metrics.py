"""``GET /api/metrics``: the instance in Prometheus' text format, for its operator only.

An instance admin's key, or the local operator (no login, loopback only):
the same access as ``/api/recovery``. A company key or a run token is
refused. Nothing in it names a company (``paperclip.metrics``).
"""

from __future__ import annotations

from typing import Any, cast

from litestar import Response, get
from litestar.datastructures import State
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy.ext.asyncio import AsyncEngine

from paperclip import metrics
from paperclip.common.operations import InstanceFigures, instance_figures
from paperclip.http.access import Access, access


class _Figures(Collector):
    """The scrape-time figures of the database and this replica, as metric families."""

    def __init__(self, figures: InstanceFigures | None, state: State) -> None:
        self.figures = figures
        self.state = state

    def collect(self) -> Any:
        in_use = GaugeMetricFamily(
            "paperclip_database_pool_connections",
            "This replica's database connections, by pool (main, journal, numbers) and state "
            "(in_use, idle).",
            labels=["pool", "state"],
        )
        for name, engine in (
            ("main", self.state.engine),
            ("journal", self.state.journal_engine),
            ("numbers", self.state.numbers_engine),
        ):
            pool: Any = cast(AsyncEngine, engine).pool
            in_use.add_metric([name, "in_use"], pool.checkedout())
            in_use.add_metric([name, "idle"], pool.checkedin())
        yield in_use
        yield GaugeMetricFamily(
            "paperclip_runners_connected",
            "Runner connections this replica holds.",
            value=len(self.state.run_engine.connections.links),
        )
        yield GaugeMetricFamily(
            "paperclip_runs_controlled",
            "Runs this replica controls now (holds the lease of).",
            value=len(self.state.run_engine.ownership),
        )
        up = GaugeMetricFamily(
            "paperclip_database_up", "1 when the scrape could read the database, else 0."
        )
        up.add_metric([], 1 if self.figures is not None else 0)
        yield up
        if self.figures is None:
            return
        f = self.figures
        yield _by("paperclip_runs", "Runs, by status.", "status", f.runs)
        yield _by("paperclip_turns", "Turns of runs, by status.", "status", f.turns)
        yield GaugeMetricFamily(
            "paperclip_journal_pending",
            "Tool calls journaled whose result is not saved yet.",
            value=f.pending_calls,
        )
        yield _by("paperclip_holds_active", "Active task holds, by kind.", "kind", f.holds)
        yield GaugeMetricFamily(
            "paperclip_wakes_queued", "Wake requests waiting for a run.", value=f.queued_wakes
        )
        yield GaugeMetricFamily(
            "paperclip_runner_outbox",
            "Messages to runners not acknowledged yet.",
            value=f.outbox,
        )
        tokens = CounterMetricFamily(
            "paperclip_tokens", "Tokens of every recorded usage, by kind.", labels=["kind"]
        )
        for kind, count in f.tokens.items():
            tokens.add_metric([kind], count)
        yield tokens
        cost = CounterMetricFamily(
            "paperclip_cost_micros",
            "Cost of every recorded usage, in millionths of its currency.",
            labels=["currency"],
        )
        for currency, micros in f.cost_micros.items():
            cost.add_metric([currency], micros)
        yield cost


def _by(name: str, documentation: str, label: str, counts: dict[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for value, count in sorted(counts.items()):
        family.add_metric([value], count)
    return family


@get("/metrics", tags=["operations"], opt=access(Access.INSTANCE), media_type=CONTENT_TYPE_LATEST)
async def metrics_page(state: State) -> Response[bytes]:
    """This replica's metrics and the instance's figures (docs/operations.md#metrics)."""
    try:
        figures: InstanceFigures | None = await instance_figures(state.container.sessions())
    except Exception:  # the database away is a figure of its own (paperclip_database_up 0)
        figures = None
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Figures(figures, state))
    body = generate_latest(metrics.REGISTRY) + generate_latest(registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
