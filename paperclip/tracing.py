"""OpenTelemetry spans of a run's work: its wake's claim, each turn, each tool call.

Every span of a run is in one trace whose id is the run's id, so a trace
viewer shows a run whole whichever replica did which part (a run adopted by
another replica goes on in the same trace). Spans are recorded after the
fact with their own start and end times: nothing is held open across the
engine's awaits.

Only OpenTelemetry's API is needed here (``mcp`` brings it); without an SDK
configured, every span is a no-op. ``paperclip serve`` configures the SDK
when the ``traces`` extra is installed and ``OTEL_EXPORTER_OTLP_ENDPOINT``
is set (:func:`configure`).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from typing import Any

log = logging.getLogger(__name__)

try:
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags
except ImportError:  # pragma: no cover - the API comes with mcp
    trace = None  # type: ignore[assignment]

TRACER = "paperclip"
_LOW_64 = (1 << 64) - 1


def now() -> int:
    """A span's time: nanoseconds since the epoch, as OpenTelemetry counts them."""
    return time.time_ns()


def _recording() -> bool:
    """Whether a span may go anywhere: a provider is set (the API's default, a proxy, makes
    no-op spans until one is). Building a no-op span costs about 10 µs, on every tool call."""
    return trace is not None and not isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider
    )


def _run_context(run_id: uuid.UUID) -> Any:
    parent = SpanContext(
        trace_id=run_id.int,
        span_id=(run_id.int & _LOW_64) or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def record(
    name: str, run_id: uuid.UUID, start: int, end: int | None = None, **attributes: object
) -> None:
    """A finished span ``name`` of ``run_id``'s trace, from ``start`` to ``end`` (now)."""
    if not _recording():
        return
    span = trace.get_tracer(TRACER).start_span(
        name,
        context=_run_context(run_id),
        kind=SpanKind.INTERNAL,
        start_time=start,
        attributes={"paperclip.run_id": str(run_id)}
        | {f"paperclip.{k}": str(v) for k, v in attributes.items() if v is not None},
    )
    span.end(end_time=end if end is not None else now())


MEMORY = 4096
"""Turns in flight whose start is remembered for their span (the oldest forgotten first)."""
_turns: dict[tuple[uuid.UUID, int], int] = {}


def turn_began(run_id: uuid.UUID, turn: int) -> None:
    """A runner started the run's turn here: its span starts now."""
    _turns[(run_id, turn)] = now()
    while len(_turns) > MEMORY:
        del _turns[next(iter(_turns))]


def turn_ended(run_id: uuid.UUID, turn: int, **attributes: object) -> None:
    """The turn ended: its span, from when it began (if it began on this replica)."""
    began = _turns.pop((run_id, turn), None)
    if began is not None:
        record("paperclip.turn", run_id, began, turn=turn, **attributes)


def configure(service_name: str) -> bool:
    """Export spans over OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set and the SDK is
    installed (``pip install 'paperclip-control-plane[traces]'``); whether it did."""
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or trace is None:
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the traces extra is not installed: "
            "pip install 'paperclip-control-plane[traces]'"
        )
        return False
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    log.info("exporting traces to %s", os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"])
    return True
