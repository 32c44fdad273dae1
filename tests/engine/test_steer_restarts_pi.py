"""Seed 004 with Pi: a steer acknowledged but unread, then two restarts, is read exactly once.

Real processes: the control plane, the runner and the fake Pi (Pi 0.73's RPC).
Pi records an input entering the conversation as a user ``message_end``, not
as Codex's ``userMessage`` item; the steer ledger reads that. The first turn
holds while a steer waits in Pi's queue; the runner and Pi are SIGKILLed; the
next turn carries the steer; once its input entered the conversation, a
second SIGKILL's next turn carries nothing.
"""

from __future__ import annotations

import signal
import sys

import psutil
import pytest

from tests.engine.test_steer_restarts import STEER, running_turn, steer, turn_rows
from tests.providers.scenarios import fake_agent
from tests.support.processes import wait_until

FAKE = [sys.executable, "-m", "paperclip_pi_testing.fake_pi"]

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def pi_agent(stack, steps: list[dict]) -> dict:
    model = "scripted-pi-steer"
    config = {
        "launch": "fake",
        "base_url": "http://127.0.0.1:9/v1",
        "model": model,
        "env_key": "SCRIPTED_MODEL_API_KEY",
    }
    return fake_agent(stack, "pi", steps, config, model)


def user_inputs(stack, ctx, run_id: str) -> list[tuple[int, str]]:
    """(turn, text) of every user message Pi recorded entering the conversation."""
    found = []
    for event in stack.events(ctx, run_id):
        message = event["payload"].get("message") or {}
        if event["type"] == "message_end" and message.get("role") == "user":
            text = " ".join(p.get("text", "") for p in message.get("content", []))
            found.append((event["turn"], text))
    return found


def pi_launch(stack) -> dict:
    """The runner's launch profiles: the fake Pi as the pi profile ``fake``."""
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    argv = [*FAKE, "--script-dir", str(stack.script_dir), "--log", str(stack.fake_log)]
    return {"pi": {"fake": argv}}


def kill_runner_and_pi(stack) -> None:
    fakes = [
        p
        for p in psutil.process_iter(["cmdline"])
        if "paperclip_pi_testing.fake_pi" in (p.info["cmdline"] or [])
        and str(stack.script_dir) in (p.info["cmdline"] or [])
    ]
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    for fake in fakes:
        fake.send_signal(signal.SIGKILL)
    stack.start_runner(launch=pi_launch(stack))


def test_an_unread_pi_steer_is_delivered_once_across_two_restarts(stack):
    stack.start_server()
    stack.start_runner(launch=pi_launch(stack))
    reached, go = stack.tmp / "reached", stack.tmp / "go"
    # Every session's prompt: hold at the gate (a steer waits in Pi's queue), then finish.
    steps = [
        {"touch_file": str(reached)},
        {"wait_for_file": str(go), "timeout": 300},
        {"message": "Done, changelog included."},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
    ]
    ctx = pi_agent(stack, steps)
    stack.assign(ctx)
    wait_until(reached.exists, 60, message="the first turn held")
    run_id = stack.runs(ctx)[0]["id"]
    running_turn(stack, ctx, run_id)
    steer(stack, ctx, run_id)  # acknowledged; Pi reads it only at the model's next call

    reached.unlink()
    kill_runner_and_pi(stack)
    wait_until(reached.exists, 90, message="the second turn held")
    wait_until(
        lambda: any(turn == 2 for turn, _ in user_inputs(stack, ctx, run_id)),
        30,
        message="the second turn's input in the log",
    )
    reached.unlink()
    kill_runner_and_pi(stack)  # a later restart, after the second turn's input was read
    wait_until(reached.exists, 90, message="the third turn held")
    go.write_text("")

    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), (run, stack.runner.tail())
    rows = turn_rows(stack, run_id)
    assert [t["number"] for t in rows] == [1, 2, 3]
    assert {t["kind"] for t in rows[1:]} <= {"continuation", "fresh_retry"}
    assert rows[1]["input"]["prompt"].count(STEER) == 1
    assert STEER not in rows[2]["input"]["prompt"]
    delivered = [text for turn, text in user_inputs(stack, ctx, run_id) if turn > 1]
    assert sum(text.count(STEER) for text in delivered) == 1, delivered
