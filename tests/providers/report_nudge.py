"""A real CLI whose model ends its first turn in prose, without ``finish``: the report nudge.

The shape every provider's real-CLI tests share: the scripted model reads the
task, comments, and ends its turn with prose and no report. The run is not
failed: the same provider session gets one short turn asking for the report
(turn kind ``report_nudge``), the model reports, and the run succeeds with the
one comment. With the nudges set to 0 (``PAPERCLIP_RUN_REPORT_NUDGES``) the
same model fails the run with ``finish_not_called``, as every such run did
before.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.providers.real_cli_loss import turns
from tests.providers.scenarios import WAIT, assert_each_tool_once, assert_succeeded_once
from tests.support.model_endpoint_script import FunctionCall, Step, calls, say

COMMENT = "Fixed the flaky test."
PROSE = "All done: the build is green again."
NUDGE_HEADING = "your report is missing"
NO_NUDGES = {"PAPERCLIP_RUN_REPORT_NUDGES": "0"}
"""The control plane's environment that turns the nudge off."""


def unreported_steps(tool: Callable[..., FunctionCall]) -> list[Step]:
    """Read the task, comment, end the turn in prose; then, asked, report."""
    return [
        calls(tool("get_task_context")),
        calls(tool("post_comment", {"body": COMMENT})),
        say(PROSE),
        calls(tool("finish", {"outcome": "done", "summary": COMMENT})),
        say("Reported."),
    ]


def assert_nudged_once(stack, ctx, endpoint) -> dict:
    """The run succeeded in a report nudge of its first turn's session, with one comment;
    the nudge's request carries the first turn's conversation and says what is missing."""
    run = stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    rows = turns(stack, run["id"])
    assert [(r["number"], r["kind"], r["status"]) for r in rows] == [
        (1, "initial", "completed"),
        (2, "report_nudge", "completed"),
    ], rows
    assert rows[0]["session_ref"] and rows[1]["session_ref"] == rows[0]["session_ref"], rows
    run = assert_succeeded_once(stack, ctx, run, COMMENT)
    assert run["answer"] == "Reported."
    assert_each_tool_once(stack, run["id"])
    requests = endpoint.scripted(ctx["model"])
    assert [r.step for r in requests] == [0, 1, 2, 3, 4]
    assert endpoint.exhausted(ctx["model"]) == []
    asked = requests[3]  # the nudge turn's first model request
    assert any(NUDGE_HEADING in text for text in asked.user_texts()), asked.user_texts()
    assert not any(NUDGE_HEADING in text for text in requests[2].user_texts())
    # The same session: the nudge's conversation holds the first turn's comment and prose.
    sent = json.dumps(asked.body)
    assert COMMENT in sent and PROSE in sent
    nudges = [e for e in stack.events(ctx, run["id"]) if e["type"] == "run.report_nudge"]
    assert [e["payload"] for e in nudges] == [{"ended_turn": 1, "turn": 2, "nudge": 1, "of": 1}]
    return run


def assert_failed_unnudged(stack, ctx, endpoint) -> dict:
    """With the nudges off: ``finish_not_called`` after the first turn, as before."""
    run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert (run["status"], run["error_code"]) == ("failed", "finish_not_called"), run
    rows = turns(stack, run["id"])
    assert [(r["number"], r["kind"], r["status"]) for r in rows] == [(1, "initial", "completed")]
    assert [r.step for r in endpoint.scripted(ctx["model"])] == [0, 1, 2]
    return run
