"""Seed 000's chat branch: a truncated chat request must be read completely before ``finish``.

Real processes (control plane, runner, fake Codex app-server). A chat message
wakes the agent through its comment; the run's wake snapshot records the read
requirement as a chat request's (``read_reason`` ``chat``) when the prompt cut
the message. The fake reports too early, follows the correction, reads, and
reports again in the same turn. A chat message shown in full needs no read
(every other chat test finishes without one).
"""

from __future__ import annotations

import uuid

import pytest
from paperclip_hookspecs.completion import READ_CURRENT_WAKE_COMMENTS

from tests.engine.chat_stack import open_chat, presented_run, replies, say
from tests.engine.test_wake_comments_on_real_runs import FINISH, FOLLOW_THE_CORRECTION, calls_of
from tests.support.db import query

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

LONG = "Please check every item of this list. " + "x" * 9_000
"""Longer than the prompt shows of one comment (RenderLimits.max_comment_chars)."""


def snapshot_of(stack, run_id: str) -> dict:
    [row] = query(
        stack.database_url,
        "SELECT read_required, read_reason, comment_count FROM wake_snapshots WHERE run_id = $1",
        uuid.UUID(run_id),
    )
    return dict(row)


def test_a_cut_chat_request_is_read_in_full_before_the_report_is_accepted(stack):
    stack.start_server()
    stack.start_runner()
    answer = "I read your whole list; every item is checked."
    ctx = stack.setup_issue(
        {"turns": [[FINISH, FOLLOW_THE_CORRECTION, FINISH, {"message": answer}]]}
    )
    open_chat(stack, ctx)
    say(stack, ctx, LONG)
    run = presented_run(stack, ctx)
    assert (run["status"], run["error_code"]) == ("succeeded", None), stack.runner.tail()
    assert snapshot_of(stack, run["id"]) == {
        "read_required": True,
        "read_reason": "chat",
        "comment_count": 1,
    }
    refused, accepted = calls_of(stack, run["id"], "finish")
    error = refused["result"]["error"]
    assert (error["code"], error["reason"]) == (READ_CURRENT_WAKE_COMMENTS, "unread")
    [page] = [c["result"] for c in calls_of(stack, run["id"], READ_CURRENT_WAKE_COMMENTS)]
    assert [c["body"] for c in page["comments"]] == [LONG] and page["complete"]
    assert not accepted["is_error"] and accepted["result"]["accepted"]
    assert replies(stack, ctx) == [answer]
