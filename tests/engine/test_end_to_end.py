"""A run end to end over HTTP, with the control plane, the runner and the fake Codex as separate processes."""

from __future__ import annotations

import pytest

from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

SCRIPT = {
    "turns": [
        [
            {"call_tool": {"name": "get_task_context", "arguments": {}}},
            {
                "call_tool": {
                    "name": "post_comment",
                    "arguments": {"body": "On it: the build is red."},
                }
            },
            {"message": "I fixed the build."},
            {
                "call_tool": {
                    "name": "finish",
                    "arguments": {"outcome": "done", "summary": "Fixed the build"},
                }
            },
        ]
    ]
}


def test_assignment_runs_the_agent_to_success(stack):
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(SCRIPT)
    with stack.api() as api:
        api.post(
            f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/comments",
            json={"body": "Please look at the failing lint job first."},
        )
    stack.assign(ctx)

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    assert run["result"]["outcome"] == "done" and run["result"]["summary"] == "Fixed the build"
    assert run["execution_input_schema"] == "paperclip.native-execution-input.v5"
    # The claim moved the task before the prompt was assembled: the brief says so.
    assert "- Status: in_progress" in str(run["execution_input"])
    assert "- Status: todo" not in str(run["execution_input"])

    # The presentation is recorded right after the status decision, in its own transaction.
    run = wait_until(lambda: next((r for r in stack.runs(ctx) if r["presentation"]), None), 30)
    comments = stack.comments(ctx)
    agent_comments = [c for c in comments if c["author_agent_id"] == ctx["agent"]["id"]]
    # Its own comment, then its final prose, presented once as the run's answer.
    assert [c["body"] for c in agent_comments] == ["On it: the build is red.", "I fixed the build."]
    assert {c["created_by_run_id"] for c in agent_comments} == {run["id"]}
    assert (run["status_reason"], run["answer"]) == ("task_completed", "I fixed the build.")
    assert run["presentation"] == {
        "presentationDecision": "answer",
        "reason": "task_completed",
        "comment_id": agent_comments[1]["id"],
    }

    with stack.api() as api:
        issue = api.get(f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}").json()
    assert issue["status"] == "done"

    events = stack.events(ctx, run["id"])
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    types = [e["type"] for e in events]
    assert types[0] == "thread/started" or "turn/started" in types
    assert types[-1] == "run.finished"
    assert types[-2] == "turn/completed"
    tool_items = [
        e["payload"]["item"]
        for e in events
        if e["type"] == "item/completed"
        and e["payload"].get("item", {}).get("type") == "mcpToolCall"
    ]
    assert [i["tool"] for i in tool_items] == ["get_task_context", "post_comment", "finish"]
    context = tool_items[0]
    assert "Fix the build" in str(context)


def test_the_persisted_execution_input_carries_turn_context_ownership(stack):
    import hashlib

    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(SCRIPT)
    base = f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/comments"
    with stack.api() as api:
        first = api.post(base, json={"body": "same words"}).json()
        second = api.post(base, json={"body": "same words"}).json()
    stack.assign(ctx)
    run = stack.wait_for_terminal_run(ctx)
    envelope = run["execution_input"]
    assert run["execution_input_schema"] == "paperclip.native-execution-input.v5"
    assert envelope["schema"] == "paperclip.native-execution-input.v5"
    turn_context = envelope["paperclipTurnContext"]
    assert turn_context["version"] == 1
    description = turn_context["assignment"]["description"]
    assert turn_context["assignment"]["owner"] == "task_markdown"
    assert description["id"] == ctx["issue"]["id"]
    assert description["revision"] == hashlib.sha256(b"The build is red.").hexdigest()
    events = turn_context["events"]
    assert events["owner"] == "wake_prompt"
    # distinct ids stay distinct even with equal bodies, in order, with the stored revisions
    assert events["comments"] == [
        {"id": first["id"], "revision": first["revision"]},
        {"id": second["id"], "revision": second["revision"]},
    ]
