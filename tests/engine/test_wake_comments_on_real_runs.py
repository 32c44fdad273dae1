"""Seed 000 through real processes: control plane, runner and the fake Codex app-server.

The fake plays a model that reports too early, follows the correction the
finish tool returns (``read_current_wake_comments`` from the given cursor),
reads every page, and reports again, all in one provider turn.
"""

from __future__ import annotations

import json
import uuid

import pytest
from paperclip_hookspecs.completion import (
    NATIVE_CURRENT_WAKE_COMMENTS_UNREAD,
    READ_CURRENT_WAKE_COMMENTS,
)

from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

COMMENTS = 105
"""More than the prompt's window of 100: the wake's comments are not all rendered."""
PAGES = 6

FINISH = {
    "call_tool": {
        "name": "finish",
        "arguments": {"outcome": "done", "summary": "Answered every comment."},
    }
}
FOLLOW_THE_CORRECTION = {
    "page_tool": {
        "name": READ_CURRENT_WAKE_COMMENTS,
        "start_cursor": "error.correction.cursor",
    }
}


def woken_for_comments(stack, script: dict) -> dict:
    """An issue with COMMENTS comments by a person, then assigned to an agent running ``script``."""
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(script)
    base = f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/comments"
    with stack.api() as api:
        ctx["comment_ids"] = [
            api.post(base, json={"body": f"Comment {n}: check item {n}."}).json()["id"]
            for n in range(1, COMMENTS + 1)
        ]
    stack.assign(ctx)
    return ctx


def calls_of(stack, run_id: str, tool: str) -> list[dict]:
    rows = query(
        stack.database_url,
        "SELECT result, is_error, status FROM tool_calls WHERE run_id = $1 AND tool = $2 "
        "ORDER BY id",
        uuid.UUID(run_id),
        tool,
    )
    return [{**row, "result": json.loads(row["result"])} for row in rows]


def test_finish_is_refused_the_model_reads_every_page_and_reports_again_in_the_same_turn(stack):
    ctx = woken_for_comments(
        stack,
        {"turns": [[FINISH, FOLLOW_THE_CORRECTION, FINISH, {"message": "All read; done."}]]},
    )
    run = stack.wait_for_terminal_run(ctx)
    assert (run["status"], run["error_code"]) == ("succeeded", None), stack.runner.tail()

    refused, accepted = calls_of(stack, run["id"], "finish")
    error = refused["result"]["error"]
    assert (error["code"], error["reason"]) == (READ_CURRENT_WAKE_COMMENTS, "unread")
    assert error["correction"]["instruction"] == READ_CURRENT_WAKE_COMMENTS
    assert not accepted["is_error"] and accepted["result"]["accepted"]
    pages = [c["result"] for c in calls_of(stack, run["id"], READ_CURRENT_WAKE_COMMENTS)]
    assert [p["page"] for p in pages] == list(range(1, PAGES + 1))
    assert [c["id"] for p in pages for c in p["comments"]] == ctx["comment_ids"]
    assert pages[-1]["complete"]
    # One run, one accepted result, one turn; the task is done.
    assert [r["id"] for r in stack.runs(ctx)] == [run["id"]]
    assert run["result"]["outcome"] == "done"
    types = [e["type"] for e in stack.events(ctx, run["id"])]
    assert types.count("turn/started") == 1 and types.count("turn/completed") == 1
    with stack.api() as api:
        issue = api.get(f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}").json()
    assert issue["status"] == "done"


def test_a_comment_edited_after_a_complete_read_fails_the_run_when_the_turn_ends(stack):
    edited = stack.tmp / "edited.point"
    ctx = woken_for_comments(
        stack,
        {
            "turns": [
                [
                    {"page_tool": {"name": READ_CURRENT_WAKE_COMMENTS}},
                    FINISH,
                    {"wait_for_file": str(edited), "timeout": 60},
                    {"message": "Done."},
                ]
            ]
        },
    )

    def finish_accepted():
        rows = query(
            stack.database_url,
            "SELECT c.is_error FROM tool_calls c JOIN runs r ON r.id = c.run_id "
            "WHERE r.issue_id = $1 AND c.tool = 'finish' AND c.status = 'settled'",
            uuid.UUID(ctx["issue"]["id"]),
        )
        return rows and not rows[0]["is_error"]

    wait_until(finish_accepted, 60, message="finish accepted after a complete read")
    comment = ctx["comment_ids"][40]
    with stack.api() as api:
        r = api.patch(
            f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/comments/{comment}",
            json={"body": "Comment 41, changed after the agent read it."},
        )
        assert r.status_code == 200, r.text
    edited.touch()

    run = stack.wait_for_terminal_run(ctx)
    assert (run["status"], run["error_code"]) == ("failed", NATIVE_CURRENT_WAKE_COMMENTS_UNREAD)
