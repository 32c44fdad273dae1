"""A run as its operator sees it: its tool calls and turn in /api/metrics, its log lines
(JSON) naming its run, issue and company. Separate processes, as in production."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.engine.test_end_to_end import SCRIPT
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def scrape(server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"{server.url}/api/metrics", headers=server.headers, timeout=10).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_a_run_is_counted_in_the_metrics_and_named_in_each_log_line(stack):
    server = stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(SCRIPT)
    stack.assign(ctx)
    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", stack.runner.tail()

    seen = scrape(stack.servers[0])
    assert seen[("paperclip_tool_calls_total", (("outcome", "ok"), ("tool", "finish")))] == 1
    assert seen[("paperclip_tool_calls_total", (("outcome", "ok"), ("tool", "post_comment")))] == 1
    assert seen[("paperclip_tool_call_seconds_count", (("tool", "finish"),))] == 1
    assert seen[("paperclip_turns_started_total", ())] == 1
    assert seen[("paperclip_wake_to_turn_seconds_count", ())] == 1
    assert 0 < seen[("paperclip_wake_to_turn_seconds_sum", ())] < 60
    assert seen[("paperclip_runs", (("status", "succeeded"),))] >= 1
    assert seen[("paperclip_runners_connected", ())] == 1
    assert seen[("paperclip_journal_pending", ())] == 0

    server.stop()
    text = server.log_path.read_text().splitlines()
    lines = [json.loads(line) for line in text if line.startswith("{")]
    about_run = [line for line in lines if line.get("run_id") == run["id"]]
    messages = [line["message"] for line in about_run]
    assert any("started on runner" in m for m in messages), messages
    assert any(m.endswith("ended succeeded") for m in messages), messages
    for line in about_run:
        assert line["company_id"] == ctx["company"]["id"]
        assert line["issue_id"] == ctx["issue"]["id"]
    for line in lines:
        # ISO 8601, in UTC, with its offset: never a local time that reads two ways.
        stamp = datetime.fromisoformat(line["ts"])
        assert stamp.utcoffset() is not None and stamp.utcoffset().total_seconds() == 0
        assert line["ts"].endswith("+00:00")


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: every span it is sent, decoded."""

    spans: list = []

    def do_POST(self):
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        request = ExportTraceServiceRequest()
        request.ParseFromString(self.rfile.read(int(self.headers["content-length"])))
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                Collector.spans.extend(scope.spans)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_run_is_one_trace_of_its_wake_turn_and_tool_calls(stack):
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    stack.extra_env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_address[1]}",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    try:
        stack.start_server()
        stack.start_runner()
        ctx = stack.setup_issue(SCRIPT)
        stack.assign(ctx)
        run = stack.wait_for_terminal_run(ctx)
        assert run["status"] == "succeeded", stack.runner.tail()
        trace_id = uuid.UUID(run["id"]).bytes

        def spans() -> list:
            mine = [s for s in Collector.spans if s.trace_id == trace_id]
            return mine if any(s.name == "paperclip.turn" for s in mine) else []

        mine = wait_until(spans, 20, 0.2, "the run's spans exported")
    finally:
        receiver.shutdown()
    names = [s.name for s in mine]
    assert names.count("paperclip.wake") == 1 and names.count("paperclip.turn") == 1
    tools = sorted(
        a.value.string_value
        for s in mine
        if s.name == "paperclip.tool_call"
        for a in s.attributes
        if a.key == "paperclip.tool"
    )
    assert tools == ["finish", "get_task_context", "post_comment"]
    wake = next(s for s in mine if s.name == "paperclip.wake")
    turn = next(s for s in mine if s.name == "paperclip.turn")
    assert wake.end_time_unix_nano <= turn.start_time_unix_nano < turn.end_time_unix_nano
    assert all(s.end_time_unix_nano >= s.start_time_unix_nano for s in mine)
