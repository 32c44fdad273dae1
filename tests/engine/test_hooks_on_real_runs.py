"""Each decision hook, answered by an installed plugin, changes what happens on a real run.

The plugin is a distribution on the control plane's path (its metadata and
``paperclip`` entry point), discovered at startup as any installed plugin is;
the control plane, the runner and the fake Codex are separate processes.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.plugins.fakes import FakeSite
from tests.support.db import HeldLock, query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def install(stack, name: str, source: str) -> None:
    """Install a one-module plugin for the control plane processes this stack starts."""
    site = FakeSite(stack.tmp / "site")
    site.path.mkdir(exist_ok=True)
    site.install(
        f"paperclip-{name}",
        entry_points={name: name.replace("-", "_")},
        modules={name.replace("-", "_"): source},
    )
    stack.extra_env["PYTHONPATH"] = str(site.path)


def finish(outcome: str = "done", **more) -> dict:
    return {
        "call_tool": {"name": "finish", "arguments": {"outcome": outcome, "summary": "ok", **more}}
    }


def calls_of(stack, run_id: str, tool: str) -> list[dict]:
    rows = query(
        stack.database_url,
        "SELECT result, is_error, status FROM tool_calls WHERE run_id = $1 AND tool = $2 "
        "ORDER BY id",
        uuid.UUID(run_id),
        tool,
    )
    return [{**row, "result": json.loads(row["result"])} for row in rows]


def start(stack, script: dict) -> dict:
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    return ctx


REFUSE_EVERY_REPORT = """
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.completion import CompletionCorrection, CompletionRefusal, CompletionStage

@hookimpl
def paperclip_check_completion(check):
    if check.stage is CompletionStage.FEEDBACK:
        return CompletionRefusal(
            code="review_checklist_missing",
            reason="checklist",
            message="Post the review checklist first.",
            correction=CompletionCorrection(instruction="post_comment", message="Post it."),
        )
    return None
"""


def test_paperclip_check_completion_a_plugin_refusing_every_report_refuses_finish(stack):
    install(stack, "strict-guard", REFUSE_EVERY_REPORT)
    ctx = start(stack, {"turns": [[finish(), {"message": "could not finish"}]]})

    run = stack.wait_for_terminal_run(ctx)
    assert (run["status"], run["error_code"]) == ("failed", "finish_not_called")
    # Refused in the first turn, then again in the report nudge's turn (the script repeats).
    refusals = calls_of(stack, run["id"], "finish")
    assert len(refusals) == 2
    for refused in refusals:
        assert refused["is_error"] and refused["status"] == "settled"
        error = refused["result"]["error"]
        assert error["code"] == "review_checklist_missing"
        assert error["correction"] == {
            "instruction": "post_comment",
            "message": "Post it.",
            "cursor": None,
            "restart": False,
        }


REFUSE_AT_THE_END = """
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.completion import CompletionRefusal, CompletionStage

@hookimpl
def paperclip_check_completion(check):
    if check.stage is CompletionStage.TERMINAL and check.report.status == "done":
        return CompletionRefusal(code="late_evidence_missing", reason="late", message="no")
    return None
"""


def test_paperclip_check_completion_the_terminal_stage_fails_the_run(stack):
    install(stack, "late-guard", REFUSE_AT_THE_END)
    ctx = start(stack, {"turns": [[finish(), {"message": "done"}]]})

    run = stack.wait_for_terminal_run(ctx)
    # Accepted inside the turn, refused after it: the run fails with the guard's code.
    [accepted] = calls_of(stack, run["id"], "finish")
    assert not accepted["is_error"]
    assert (run["status"], run["error_code"]) == ("failed", "late_evidence_missing")
    with stack.api() as api:
        issue = api.get(f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}").json()
    assert issue["status"] == "todo"


REFUSE_EVERY_REFERENCE = """
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import ReferenceCheck, RefusedReference

@hookimpl
def paperclip_validate_completion_references(references, rendered):
    return ReferenceCheck(
        accepted=(), refused=tuple(RefusedReference(r, "not_rendered") for r in references)
    )
"""


def test_paperclip_validate_completion_references_an_installed_plugin_is_asked_at_finish(stack):
    install(stack, "no-references", REFUSE_EVERY_REFERENCE)
    task_reference = {"kind": "task", "id": "PLACEHOLDER"}
    script = {"turns": [[finish(references=[task_reference]), finish()]]}
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(script)
    # The task itself is always rendered: the built-in check would accept this reference.
    task_reference["id"] = ctx["issue"]["id"]
    stack.rewrite_script(ctx, script)
    stack.assign(ctx)

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded"
    refused, accepted = calls_of(stack, run["id"], "finish")
    assert refused["result"]["error"]["code"] == "completion_reference_not_rendered"
    assert [r["reason"] for r in refused["result"]["error"]["refused"]] == ["not_rendered"]
    assert not accepted["is_error"]


PRESENT_NOTHING = """
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.presentation import PresentationDecision

@hookimpl
def paperclip_decide_presentation(turn):
    return PresentationDecision.none("quiet_agent")
"""


def test_paperclip_decide_presentation_an_installed_plugin_keeps_the_answer_out(stack):
    install(stack, "quiet", PRESENT_NOTHING)
    ctx = start(stack, {"turns": [[finish(), {"message": "All done, see the diff."}]]})

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded" and run["answer"] == "All done, see the diff."
    run = wait_until(lambda: next((r for r in stack.runs(ctx) if r["presentation"]), None), 30)
    assert run["presentation"] == {
        "presentationDecision": "none",
        "reason": "quiet_agent",
        "comment_id": None,
    }
    assert [c for c in stack.comments(ctx) if c["author_agent_id"]] == []


ONE_VOICE = """
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.presentation import PresentationDecision

@hookimpl
def paperclip_decide_presentation(turn):
    said = [c.body for c in turn.run.comments]
    tools = [c.tool for c in turn.run.tool_calls]
    if said:
        return PresentationDecision.none(f"said:{'|'.join(said)};called:{','.join(tools)}")
    return None
"""


def test_paperclip_decide_presentation_sees_what_the_run_did(stack):
    install(stack, "one-voice", ONE_VOICE)
    comment = {"call_tool": {"name": "post_comment", "arguments": {"body": "Fixed the key."}}}
    ctx = start(stack, {"turns": [[comment, finish(), {"message": "Done."}]]})

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", run["error_message"]
    run = wait_until(lambda: next((r for r in stack.runs(ctx) if r["presentation"]), None), 30)
    # The decision was made from the run's view: its comment and its journaled calls.
    assert run["presentation"]["presentationDecision"] == "none"
    assert run["presentation"]["reason"] == "said:Fixed the key.;called:post_comment,finish"
    assert [c["body"] for c in stack.comments(ctx) if c["author_agent_id"]] == ["Fixed the key."]


SETTLE_AS_INTERRUPTED = """
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.receipts import ToolRecovery

@hookimpl
def paperclip_recover_tool_input(pending):
    if pending.receipt is None and pending.owner_gone:
        return ToolRecovery.interrupted("this deployment never runs a tool twice")
    return None
"""


def test_paperclip_recover_tool_input_an_installed_plugin_decides_after_a_restart(stack):
    install(stack, "never-twice", SETTLE_AS_INTERRUPTED)
    script = {
        "turns": [
            [
                {"call_tool": {"name": "post_comment", "arguments": {"body": "maybe once"}}},
                finish("needs_review"),
            ]
        ]
    }
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(script)
    # Writers of comments wait: the call is admitted, then stuck mid-transaction.
    lock = HeldLock(stack.database_url, "LOCK TABLE comments IN EXCLUSIVE MODE").__enter__()
    try:
        stack.assign(ctx)

        def admitted():
            rows = query(
                stack.database_url,
                "SELECT c.status FROM tool_calls c JOIN runs r ON r.id = c.run_id "
                "WHERE r.issue_id = $1 AND c.tool = 'post_comment'",
                uuid.UUID(ctx["issue"]["id"]),
            )
            return rows and rows[0]["status"] == "pending"

        wait_until(admitted, 60, message="post_comment journaled and pending")
        time.sleep(0.3)  # the dispatch is inside its transaction, waiting for the lock
        stack.servers[0].kill()
    finally:
        lock.release()
    stack.start_server()

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", stack.runner.tail()
    # The built-in would run the call again (it provably had no effect); the plugin
    # settled it as interrupted instead, and the model was told so.
    [call] = calls_of(stack, run["id"], "post_comment")
    assert call["status"] == "settled" and call["is_error"]
    error = call["result"]["error"]
    assert (error["code"], error["outcome"], error["retryable"]) == (
        "tool_call_interrupted_by_restart",
        "unknown",
        False,
    )
    assert [c for c in stack.comments(ctx) if c["author_agent_id"]] == []
