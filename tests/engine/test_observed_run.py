"""A run as its operator sees it: its tool calls and turn in /api/metrics, its log lines
(JSON) naming its run, issue and company. Separate processes, as in production."""

from __future__ import annotations

import json
from datetime import datetime

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.engine.test_end_to_end import SCRIPT

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"{url}/api/metrics", timeout=10).text
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

    seen = scrape(stack.url())
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
