"""Seed 001 on a real resume: a restart continuation is assembled through the resumed lane.

Real processes: the control plane, the runner and the fake Codex app-server.
A held turn is steered over the API, then the runner and its provider are
SIGKILLed; the run goes on in the same thread. The continuation's input is the
resumed lane's: the compact brief names the unchanged description instead of
repeating it, the objective (the steer, recorded as ``objectiveSource``)
points to the message the continuation shows instead of repeating it, and the
wake delta lists the steered comment without its text (continuation
suppression).

The rollback switch (``PAPERCLIP_PROMPT_OWNERSHIP=false``) is set on the
restarted control plane: the run started on v5 finishes on v5 (session
pinning), and a new run is written as v4 with the legacy wake rendering.
"""

from __future__ import annotations

import pytest

from tests.engine.test_steer_restarts import (
    STEER,
    kill_runner_and_provider,
    running_turn,
    steer,
    turn_rows,
    user_messages,
)
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

V5 = "paperclip.native-execution-input.v5"
V4 = "paperclip.native-execution-input.v4"


def held_then_finish(stack) -> tuple[dict, dict]:
    """Turn 1 holds at a gate that never opens; turn 2 (the continuation) finishes."""
    files = {n: stack.tmp / n for n in ("held", "never")}
    script = {
        "turns": [
            [
                {"touch_file": str(files["held"])},
                {"wait_for_file": str(files["never"]), "timeout": 300},
            ],
            [
                {"message": "Done."},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "done after the restart"},
                    }
                },
            ],
        ]
    }
    return script, files


def lost_and_resumed(stack, *, steered: bool, rollback: bool = False) -> tuple[dict, str, str]:
    """A run lost mid-turn (steered first, when ``steered``) that finishes in its continuation."""
    stack.start_server()
    stack.start_runner()
    script, files = held_then_finish(stack)
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    wait_until(files["held"].exists, 60, message="the first turn held")
    run_id = stack.runs(ctx)[0]["id"]
    running_turn(stack, ctx, run_id)
    comment_id = steer(stack, ctx, run_id) if steered else ""
    if rollback:
        stack.extra_env["PAPERCLIP_PROMPT_OWNERSHIP"] = "false"
    kill_runner_and_provider(stack, control_plane=rollback)
    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), (run, stack.runner.tail())
    return ctx, run_id, comment_id


def test_a_restart_continuation_refers_to_the_steer_it_shows_instead_of_repeating_it(stack):
    ctx, run_id, comment_id = lost_and_resumed(stack, steered=True)
    rows = turn_rows(stack, run_id)
    assert [(t["number"], t["kind"]) for t in rows] == [(1, "initial"), (2, "continuation")]
    turn = rows[1]["input"]
    prompt = turn["prompt"]
    stored = turn["executionInput"]
    assert (stored["schema"], stored["attempt"], stored["lane"]) == (V5, "resumed", "native")
    assert stored["modelEnvelope"]["prompt"] == prompt
    # The compact brief: the session holds the description; it is named, not repeated.
    assert "## Paperclip task (resumed session)" in prompt
    assert "Description: unchanged since your brief" in prompt
    assert "The build is red." not in prompt
    # objectiveSource: the steer, shown once in the continuation and referred to after it.
    continuation = stored["executionContinuation"]
    assert continuation["objectiveSource"]["kind"] == "comment"
    assert continuation["objectiveSource"]["id"] == comment_id
    assert f"Continue with comment {comment_id} shown above" in prompt
    assert prompt.count(STEER) == 1
    # The steered comment is this turn's current comment: the wake delta keeps its
    # author and trust and points to the continuation (suppression), and it is owned.
    delta = prompt.split("## Paperclip resume delta", 1)[1]
    assert f"### Comment 1 of 1: {comment_id}" in delta
    assert "Its text is shown unchanged in the continuation above." in delta
    owned = stored["paperclipTurnContext"]["events"]["comments"]
    assert [c["id"] for c in owned] == [comment_id]
    # What the restart continuation promised before stays: the steer, the instruction.
    assert turn["steeredMessages"] == [
        {"id": comment_id, "issueId": ctx["issue"]["id"], "body": STEER}
    ]
    assert "interrupted by a restart" in prompt
    assert "Handle each of them once, oldest first" in prompt
    # The provider got exactly that input, in the same thread.
    assert [text.count(STEER) for n, text in user_messages(stack, ctx, run_id) if n == 2] == [1]


def test_the_rollback_switch_keeps_a_started_run_on_v5_and_starts_new_runs_on_v4(stack):
    ctx, run_id, _ = lost_and_resumed(stack, steered=False, rollback=True)
    run = stack.wait_for_terminal_run(ctx)
    assert run["execution_input_schema"] == V5
    rows = turn_rows(stack, run_id)
    stored = rows[1]["input"]["executionInput"]
    assert (stored["schema"], stored["attempt"]) == (V5, "resumed")
    assert "paperclipTurnContext" in stored
    assert rows[1]["input"]["system"]  # the rules stay in Codex's system carrier

    # A new run under the switch: v4, no ownership metadata, the legacy wake rendering.
    script, _ = held_then_finish(stack)
    script["turns"] = [script["turns"][1]]
    later = stack.setup_issue(script)
    stack.assign(later)
    fresh = stack.wait_for_terminal_run(later)
    assert fresh["status"] == "succeeded", stack.runner.tail()
    assert fresh["execution_input_schema"] == V4
    assert fresh["execution_input"]["schema"] == V4
    assert "paperclipTurnContext" not in fresh["execution_input"]
    assert (
        fresh["execution_input"]["modelEnvelope"]["schema"] == "paperclip.native-model-envelope.v2"
    )
    assert fresh["execution_input"]["sections"]["assignmentOnly"] is False
