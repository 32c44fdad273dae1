"""Seed 004: a steer the provider acknowledged survives a restart, and is delivered once.

Real processes: the control plane, the runner and the fake Codex app-server.
A held turn is steered over the API; then the runner and its provider are
SIGKILLed (variant: the control plane too) and recovery resumes the thread in
a restart continuation. Unread, the steer rides in the continuation exactly
once; read (the fake's ``consume_steer``), it does not come again. Either way
a later restart, after the continuation's input was read, delivers nothing.
"""

from __future__ import annotations

import json
import signal
import uuid

import pytest

from tests.engine.test_durable_restarts import fake_processes
from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

STEER = "Also mention the changelog in your summary."


def three_turn_script(stack, *, read: bool) -> tuple[dict, dict]:
    """Turn 1 holds at a gate (after reading the steer, when ``read``); turn 2, the
    continuation, holds at another; turn 3 finishes."""
    files = {n: stack.tmp / n for n in ("held", "steered", "read", "turn2", "never")}
    first = [{"touch_file": str(files["held"])}]
    if read:
        # The fake reads pending steers before each step, as a model does at its next step.
        first += [
            {"wait_for_file": str(files["steered"]), "timeout": 120},
            {"touch_file": str(files["read"])},
        ]
    first.append({"wait_for_file": str(files["never"]), "timeout": 300})
    script = {
        "consume_steer": read,
        "turns": [
            first,
            [
                {"touch_file": str(files["turn2"])},
                {"wait_for_file": str(files["never"]), "timeout": 300},
            ],
            [
                {"message": "Done, changelog included."},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "done after two restarts"},
                    }
                },
            ],
        ],
    }
    return script, files


def turn_rows(stack, run_id: str) -> list[dict]:
    rows = query(
        stack.database_url,
        "SELECT number, kind, status, input FROM run_turns WHERE run_id = $1 ORDER BY number",
        uuid.UUID(run_id),
    )
    for row in rows:
        if isinstance(row["input"], str):
            row["input"] = json.loads(row["input"])
    return rows


def user_messages(stack, ctx, run_id: str) -> list[tuple[int, str]]:
    """(turn, text) of every userMessage item the provider recorded, in log order."""
    found = []
    for event in stack.events(ctx, run_id):
        item = event["payload"].get("item") or {}
        if event["type"] == "item/completed" and item.get("type") == "userMessage":
            text = " ".join(p.get("text", "") for p in item.get("content", []))
            found.append((event["turn"], text))
    return found


def running_turn(stack, ctx, run_id: str) -> None:
    def running():
        with stack.api() as api:
            items = api.get(f"/companies/{ctx['company']['id']}/runs/{run_id}/turns").json()
        return items["items"] and items["items"][-1]["status"] == "running"

    wait_until(running, 60, message="the turn running")


def steer(stack, ctx, run_id: str) -> str:
    company = ctx["company"]["id"]
    with stack.api() as api:
        comment = api.post(
            f"/companies/{company}/issues/{ctx['issue']['id']}/comments", json={"body": STEER}
        ).json()
        sent = api.post(
            f"/companies/{company}/runs/{run_id}/steer", json={"comment_id": comment["id"]}
        )
        assert sent.status_code == 202, sent.text
        assert sent.json()["delivery"] == "steer" and not sent.json()["duplicate"]
        again = api.post(
            f"/companies/{company}/runs/{run_id}/steer", json={"comment_id": comment["id"]}
        )
        assert again.status_code == 200 and again.json()["duplicate"], again.text
    wait_until(
        lambda: any(
            e["type"] == "steering_acknowledgement" and e["payload"]["message_id"] == comment["id"]
            for e in stack.events(ctx, run_id)
        ),
        30,
        message="the provider's acknowledgement in the run log",
    )
    return comment["id"]


def kill_runner_and_provider(stack, *, control_plane: bool = False) -> None:
    providers = fake_processes(stack)
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    for provider in providers:
        provider.send_signal(signal.SIGKILL)
    if control_plane:
        stack.servers[0].kill()
        stack.start_server()
    stack.start_runner()


def play(stack, *, read: bool, control_plane: bool = False) -> tuple[dict, str, str, list[dict]]:
    stack.start_server()
    stack.start_runner()
    script, files = three_turn_script(stack, read=read)
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    wait_until(files["held"].exists, 60, message="the first turn held")
    run_id = stack.runs(ctx)[0]["id"]
    running_turn(stack, ctx, run_id)
    comment_id = steer(stack, ctx, run_id)
    if read:
        files["steered"].touch()
        wait_until(files["read"].exists, 30, message="the steer read")
        wait_until(
            lambda: (1, STEER) in user_messages(stack, ctx, run_id),
            30,
            message="the steer's userMessage in the log",
        )

    kill_runner_and_provider(stack, control_plane=control_plane)
    wait_until(files["turn2"].exists, 90, message="the continuation running")
    wait_until(
        lambda: any(turn == 2 for turn, _ in user_messages(stack, ctx, run_id)),
        30,
        message="the continuation's input in the log",
    )
    kill_runner_and_provider(stack)  # a later restart, after the continuation's input

    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), (run, stack.runner.tail())
    rows = turn_rows(stack, run_id)
    assert [(t["number"], t["kind"]) for t in rows] == [
        (1, "initial"),
        (2, "continuation"),
        (3, "continuation"),
    ]
    # The third turn carries nothing: the continuation before it delivered (or had
    # nothing to deliver), and the log says so.
    assert rows[2]["input"]["steeredMessages"] == []
    assert STEER not in rows[2]["input"]["prompt"]
    return ctx, run_id, comment_id, rows


def delivered(stack, ctx, run_id: str) -> int:
    """How many times the steer's text reached the model after turn 1 (through the
    provider's own record of each turn's input)."""
    return sum(text.count(STEER) for turn, text in user_messages(stack, ctx, run_id) if turn > 1)


def test_an_unread_steer_is_delivered_once_by_the_restart_continuation(stack):
    ctx, run_id, comment_id, rows = play(stack, read=False)
    carried = rows[1]["input"]["steeredMessages"]
    assert carried == [{"id": comment_id, "issueId": ctx["issue"]["id"], "body": STEER}]
    assert rows[1]["input"]["prompt"].count(STEER) == 1
    assert "Handle each of them once, oldest first" in rows[1]["input"]["prompt"]
    assert delivered(stack, ctx, run_id) == 1


def test_an_unread_steer_survives_the_control_plane_killed_too(stack):
    ctx, run_id, comment_id, rows = play(stack, read=False, control_plane=True)
    assert [m["id"] for m in rows[1]["input"]["steeredMessages"]] == [comment_id]
    assert delivered(stack, ctx, run_id) == 1


def test_a_steer_the_model_read_before_the_restart_is_not_delivered_again(stack):
    ctx, run_id, _, rows = play(stack, read=True)
    assert rows[1]["input"]["steeredMessages"] == []
    assert STEER not in rows[1]["input"]["prompt"]
    assert delivered(stack, ctx, run_id) == 0
    assert [t for t, text in user_messages(stack, ctx, run_id) if STEER in text] == [1]
