"""The chaos invariant checks find what they name, on records shaped as the database returns them."""

from __future__ import annotations

import json
import logging
import uuid

from paperclip.chaos.invariants import (
    acknowledged_bodies,
    duplicated_comments,
    lost_acknowledged_writes,
    steers_not_read_once,
    tools_executed_twice,
    tracebacks_logged,
    turns_started_twice,
    unsettled_tasks,
)
from paperclip.logging import JsonFormatter

ISSUE, RUN = uuid.uuid4(), uuid.uuid4()


def comment(body: str, run=RUN) -> dict:
    return {"issue_id": ISSUE, "body": body, "created_by_run_id": run}


def test_a_duplicated_comment_is_found_and_a_single_one_is_not():
    found = duplicated_comments([comment("chaos a: 1"), comment("chaos a: 1"), comment("other")])
    assert [v.kind for v in found] == ["comment_duplicated"]
    assert "chaos a: 1" in found[0].detail


def test_a_comment_made_more_often_than_it_was_asked_is_a_tool_run_twice():
    calls = [{"run_id": RUN, "tool": "post_comment", "arguments": {"body": "chaos a: 1"}}]
    assert tools_executed_twice([comment("chaos a: 1")], calls) == []
    found = tools_executed_twice([comment("chaos a: 1"), comment("chaos a: 1")], calls)
    assert [v.kind for v in found] == ["tool_executed_twice"]


def test_an_acknowledged_write_missing_from_the_database_is_lost(tmp_path):
    log = tmp_path / "fake.log"
    entries = [
        {"type": "tool_result", "name": "post_comment", "ok": True,
         "arguments": {"body": "chaos a: 1"}, "result": {"structuredContent": {"comment_id": "x"}}},
        {"type": "tool_result", "name": "post_comment", "ok": True,
         "arguments": {"body": "chaos a: 2"}, "result": {"structuredContent": {"comment_id": "y"}}},
        {"type": "tool_result", "name": "post_comment", "ok": True,
         "arguments": {"body": "chaos a: 4"},
         "result": {"content": [{"type": "text", "text": "The tool call failed"}]}},
        {"type": "tool_result", "name": "post_comment", "ok": False,
         "arguments": {"body": "chaos a: 3"}, "error": "refused"},
    ]  # fmt: skip
    log.write_text("\n".join(json.dumps(e) for e in entries) + '\n{"cut sho')
    acknowledged = acknowledged_bodies(log)
    assert acknowledged == ["chaos a: 1", "chaos a: 2"]
    found = lost_acknowledged_writes([comment("chaos a: 1")], acknowledged)
    assert [(v.kind, v.detail) for v in found] == [("acknowledged_write_lost", "'chaos a: 2'")]


def test_a_task_neither_done_nor_held_and_an_active_run_are_found():
    done, held, open_issue = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    runs = [
        {"id": 1, "issue_id": done, "status": "succeeded", "error_code": None},
        {"id": 2, "issue_id": held, "status": "failed", "error_code": "run_retries_exhausted"},
        {"id": 3, "issue_id": open_issue, "status": "running", "error_code": None},
    ]
    holds = [{"issue_id": held, "reason": "lost four times"}]
    found = unsettled_tasks([done, held, open_issue], runs, holds)
    assert sorted(v.kind for v in found) == ["run_not_terminal", "task_neither_done_nor_held"]


def test_a_turn_started_by_two_runner_processes_is_found(tmp_path):
    for runner, turns in (("runner0", [1, 2]), ("runner1", [2])):
        folder = tmp_path / runner / "runs" / "r1"
        folder.mkdir(parents=True)
        (folder / "turns.json").write_text(json.dumps([{"turn": t} for t in turns]))
    found = turns_started_twice([tmp_path / "runner0", tmp_path / "runner1"])
    assert [(v.kind, v.detail) for v in found] == [
        ("provider_started_twice", "run r1 turn 2: 2 starts")
    ]


def test_the_same_words_in_runs_of_two_wakes_are_not_a_duplicate_but_within_one_wake_they_are():
    first, second = uuid.uuid4(), uuid.uuid4()
    comments = [
        {**comment("chaos a: comment 1"), "wake": first},
        {**comment("chaos a: comment 1"), "wake": second},  # a person's comment woke it again
    ]
    assert duplicated_comments(comments) == []
    comments.append({**comment("chaos a: comment 1"), "wake": first})
    assert [v.kind for v in duplicated_comments(comments)] == ["comment_duplicated"]


def test_an_acknowledged_steer_must_reach_the_model_exactly_once():
    run_ok, run_lost, run_twice, run_refused = (uuid.uuid4() for _ in range(4))

    def steer(run, body, acknowledged=True, status="succeeded"):
        return {"run_id": run, "body": body, "acknowledged": acknowledged, "status": status}

    def said(run, text):
        return {"run_id": run, "content": json.dumps([{"type": "text", "text": text}])}

    steers = [
        steer(run_ok, "chaos a: steer 1"),
        steer(run_lost, "chaos b: steer 1"),
        steer(run_twice, "chaos c: steer 1"),
        steer(run_refused, "chaos d: steer 1", acknowledged=False),
    ]
    read = [
        said(run_ok, "chaos a: steer 1"),
        said(run_twice, "chaos c: steer 1"),
        said(run_twice, "Steered messages: chaos c: steer 1"),
    ]
    found = steers_not_read_once(steers, read)
    assert sorted(v.kind for v in found) == ["steer_delivered_twice", "steer_lost"]


def test_a_traceback_in_a_process_log_is_found_and_a_one_line_failure_is_not(tmp_path):
    log = logging.getLogger("tests.chaos.traceback")
    handler = logging.FileHandler(tmp_path / "cp0.log")
    handler.setFormatter(JsonFormatter())
    log.addHandler(handler)
    try:
        log.warning("a runner link dropped")  # an expected fault: one line
        try:
            raise RuntimeError("unhandled")
        except RuntimeError:
            log.exception("Exception in ASGI application")
    finally:
        log.removeHandler(handler)
        handler.close()
    (tmp_path / "runner0.log").write_text(
        "INFO  connected\n╭──── Traceback (most recent call last) ────╮\n│ ...\n"
    )
    (tmp_path / "runner1.log").write_text("INFO  connected\n")
    found = tracebacks_logged(
        [tmp_path / name for name in ("cp0.log", "runner0.log", "runner1.log", "gone.log")]
    )
    assert [(v.kind, v.detail.split(":")[0]) for v in found] == [
        ("traceback_logged", "cp0.log line 2"),
        ("traceback_logged", "runner0.log line 2"),
    ]
    assert found[0].detail.endswith("Exception in ASGI application")
