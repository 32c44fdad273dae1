"""A runner and its provider SIGKILLed mid-turn: the run goes on in the same provider session.

The driver reports its session as soon as the provider has one, so the lost
turn's session is durable and the next turn resumes it (a restart
continuation). The scripted model does not re-check the task: in a fresh
session it would post its comment again; resumed, it goes on from where it was.
"""

from __future__ import annotations

import signal
import uuid
from typing import Any

import psutil

from tests.providers.description import ProviderUnderTest, fake_config
from tests.providers.scenarios import fake_agent
from tests.support.db import query
from tests.support.processes import wait_until

BEFORE = "Before the loss."
AFTER = "Continuing where I left off."


def lost_turn_script(reached) -> dict[str, Any]:
    """The session's first prompt posts a comment and holds; its second (the continuation of
    the same session) finishes without posting again."""
    return {
        "turns": [
            [
                {"call_tool": {"name": "post_comment", "arguments": {"body": BEFORE}}},
                {"touch_file": str(reached)},
                {"wait_for_file": str(reached) + ".never", "timeout": 300},
            ],
            [
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "finished after the loss"},
                    }
                },
                {"message": AFTER},  # the final prose: the run's answer
            ],
        ]
    }


def fake_agent_for(stack, provider: str, script: dict) -> dict:
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    return fake_agent(stack, provider, script, fake_config(model), model)


def kill_runner_and_fake(stack, module: str, launch: dict) -> None:
    """SIGKILL the runner and the fake provider process it started; start the runner again."""
    fakes = [
        p
        for p in psutil.process_iter(["cmdline"])
        if module in (p.info["cmdline"] or [])
        and str(stack.script_dir) in (p.info["cmdline"] or [])
    ]
    assert fakes, f"no {module} process of this test"
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    for fake in fakes:
        fake.send_signal(signal.SIGKILL)
    stack.start_runner(launch=launch)


def assert_resumed_in_the_same_session(stack, ctx: dict, module: str, launch: dict) -> None:
    reached = stack.tmp / "reached"
    stack.assign(ctx)
    wait_until(reached.exists, 60, message="the first turn at its gate")
    run_id = stack.runs(ctx)[0]["id"]
    wait_until(
        lambda: query(
            stack.database_url,
            "SELECT session_ref FROM run_turns WHERE run_id = $1 AND number = 1",
            uuid.UUID(run_id),
        )[0]["session_ref"],
        30,
        message="the session reported while the turn runs",
    )
    kill_runner_and_fake(stack, module, launch)

    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    turns = query(
        stack.database_url,
        "SELECT number, kind, status, session_ref FROM run_turns WHERE run_id = $1 ORDER BY number",
        uuid.UUID(run_id),
    )
    assert [(t["number"], t["kind"], t["status"]) for t in turns] == [
        (1, "initial", "lost"),
        (2, "continuation", "completed"),
    ], turns
    assert turns[1]["session_ref"] == turns[0]["session_ref"]
    run = wait_until(lambda: next((r for r in stack.runs(ctx) if r["presentation"]), None), 30)
    bodies = [c["body"] for c in stack.comments(ctx) if c["author_agent_id"]]
    assert bodies == [BEFORE, AFTER], bodies  # the comment once, then the answer


def resumed_in_the_same_session(stack, provider: ProviderUnderTest) -> None:
    """A runner and the fake it started SIGKILLed mid-turn, once the session is reported: the
    next turn resumes it (see :func:`assert_resumed_in_the_same_session`)."""
    launch = provider.fake_launch(stack)
    stack.start_server()
    stack.start_runner(launch=launch)
    ctx = fake_agent_for(stack, provider.kind, lost_turn_script(stack.tmp / "reached"))
    assert_resumed_in_the_same_session(stack, ctx, provider.fake_module, launch)
