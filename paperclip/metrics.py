"""This process's own measurements, for ``GET /api/metrics`` (Prometheus' text format).

What only the process sees is counted here, as it happens: tool calls and how
long each took, turns started and how long after their wake, database
failures, rows the retention keeper removed. What the database knows (runs by
status, pending journal rows, holds, cost and tokens) is read when scraped
(``paperclip.common.operations``). No instrument carries a company, issue or
run label: a scrape shows the instance, never one company's data.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)
"""This process's instruments (not prometheus_client's global one: a test may build many apps)."""

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)

TOOL_CALLS = Counter(
    "paperclip_tool_calls",
    "Tool calls executed and settled by this replica, by tool and outcome (ok or error).",
    ["tool", "outcome"],
    registry=REGISTRY,
)
TOOL_CALL_SECONDS = Histogram(
    "paperclip_tool_call_seconds",
    "How long a tool call took, from its dispatch to its saved result (with its batch).",
    ["tool"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
TURNS_STARTED = Counter(
    "paperclip_turns_started",
    "Turns a runner reported started, on runs this replica controls.",
    registry=REGISTRY,
)
WAKE_TO_TURN_SECONDS = Histogram(
    "paperclip_wake_to_turn_seconds",
    "From a wake request to its run's first turn started on a runner.",
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
DATABASE_ERRORS = Counter(
    "paperclip_database_errors",
    "Background work that failed on the database, by kind (unavailable or other).",
    ["kind"],
    registry=REGISTRY,
)
RETENTION_DELETED = Counter(
    "paperclip_retention_deleted_rows",
    "History rows the retention keeper removed, by table.",
    ["table"],
    registry=REGISTRY,
)

KNOWN_TOOLS = 256
"""Distinct tool labels kept; more (plugins may add tools) are counted as ``other``."""
_tools: set[str] = set()


def tool_label(tool: str) -> str:
    """``tool``, or ``other`` once the label set is full: a series count stays bounded."""
    if tool in _tools or len(_tools) < KNOWN_TOOLS:
        _tools.add(tool)
        return tool
    return "other"


_tool_series: dict[tuple[str, str], tuple[Counter, Histogram]] = {}


def tool_call_series(tool: str, outcome: str) -> tuple[Counter, Histogram]:
    """The series a settled call of ``tool`` counts in (``TOOL_CALLS``) and is timed in
    (``TOOL_CALL_SECONDS``), looked up once per label: a lookup costs more than the count."""
    label = tool_label(tool)
    series = _tool_series.get((label, outcome))
    if series is None:
        series = (TOOL_CALLS.labels(label, outcome), TOOL_CALL_SECONDS.labels(label))
        _tool_series[(label, outcome)] = series
    return series
