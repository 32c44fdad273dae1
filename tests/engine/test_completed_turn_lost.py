"""A turn the provider completed, lost with its runner before its end was stored: real processes.

The runner is frozen at ``runner.turn_finished.before_send`` (the provider
completed the turn and its events were sent; the turn's end is not), then
SIGKILLed once the completion event is stored: the moment a chaos run's
runner kill once landed on. Its next process does not host the run, so the
turn is lost and the run goes on in a restart continuation of the same Codex
thread, which ends with a completion of its own. The run's log then holds two
``turn/completed``, each under its own turn: a replayed lost turn, which the
chaos check names as such, not a turn completed twice.
"""

from __future__ import annotations

import asyncio
import signal
import uuid

import pytest

from paperclip.chaos.completions import turn_completions
from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

POINT = "runner.turn_finished.before_send"


def finish(summary: str) -> dict:
    return {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": summary}}}


SCRIPT = {
    "turns": [
        [{"message": "Done in the first turn."}, finish("first")],
        [{"message": "Went on after the loss."}, finish("went on")],
    ]
}


def completions(stack, run_id: str) -> list[dict]:
    return query(
        stack.database_url,
        "SELECT seq, turn, source_instance FROM run_events "
        "WHERE run_id = $1 AND type = 'turn/completed' ORDER BY seq",
        uuid.UUID(run_id),
    )


def test_a_completed_turn_lost_with_its_runner_is_replayed_under_its_own_turn(stack):
    stack.start_server()
    stack.start_runner(env={"PAPERCLIP_FAILPOINTS": f"{POINT}=delay:60"})
    ctx = stack.setup_issue(SCRIPT)
    stack.assign(ctx)
    wait_until(lambda: f"failpoint {POINT} delayed" in stack.runner.tail(50), 60)
    run_id = wait_until(lambda: stack.runs(ctx) and stack.runs(ctx)[0]["id"], 10)
    # Frozen before the turn's end; its completion event reaches the control plane.
    wait_until(lambda: completions(stack, run_id), 30, message="turn 1's completion stored")
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    stack.start_runner()  # its next process, on the same work folder, unarmed

    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    turns = query(
        stack.database_url,
        "SELECT number, kind, status, error_code FROM run_turns WHERE run_id = $1 ORDER BY number",
        uuid.UUID(run_id),
    )
    assert [(t["number"], t["kind"], t["status"], t["error_code"]) for t in turns] == [
        (1, "initial", "lost", "runner_restarted"),
        (2, "continuation", "completed", None),
    ]
    # Two completions, one per turn, each from the runner process that ran it.
    done = completions(stack, run_id)
    assert [c["turn"] for c in done] == [1, 2]
    assert done[0]["source_instance"] != done[1]["source_instance"]
    # The API says which turn each belongs to.
    listed = [e for e in stack.events(ctx, run_id) if e["type"] == "turn/completed"]
    assert [(e["seq"], e["turn"]) for e in listed] == [(c["seq"], c["turn"]) for c in done]
    # The chaos check: no violation, one replayed lost turn.
    judged = asyncio.run(turn_completions(stack.database_url, ctx["company"]["id"]))
    assert judged.violations == []
    assert [(r["run"], r["turn"], r["error_code"]) for r in judged.replayed] == [
        (run_id, 1, "runner_restarted")
    ]
    # Nothing posted twice: the answer of the run's last turn, presented once.
    wait_until(lambda: next((r for r in stack.runs(ctx) if r["presentation"]), None), 30)
    bodies = [c["body"] for c in stack.comments(ctx) if c["author_agent_id"]]
    assert bodies == ["Went on after the loss."]
