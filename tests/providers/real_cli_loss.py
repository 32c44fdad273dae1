"""A real CLI lost mid-turn with everything around it: control plane, runner and CLI SIGKILLed.

The acceptance shape every provider's real-CLI tests share: the scripted model
comments, then is held at a gate; the control plane, the runner and every
process the runner started are SIGKILLed (no shutdown code runs anywhere); the
control plane and the runner start again. The script never re-checks the task,
so only a resumed session (or a fresh retry that carries what was done) keeps
the comment to one.
"""

from __future__ import annotations

import contextlib
import signal
import uuid
from collections.abc import Callable
from typing import Any

import psutil

from tests.providers.scenarios import WAIT, assert_succeeded_once
from tests.support.db import query
from tests.support.model_endpoint_script import FunctionCall, Step, calls, say
from tests.support.processes import wait_until

BEFORE = "Before the loss."
HOLD = "lost-here"


def lost_turn_steps(tool: Callable[..., FunctionCall]) -> list[Step]:
    """Read the task, comment, then a slow step (held: its answer goes nowhere); what the
    next turn gets is the finish, with no second look at the task."""
    return [
        calls(tool("get_task_context")),
        calls(tool("post_comment", {"body": BEFORE})),
        say("Thinking about the fix.", hold=HOLD),
        calls(tool("finish", {"outcome": "done", "summary": "Fixed after the loss"})),
        say("Done after the loss."),
    ]


def session_reported(stack, run_id: str) -> str:
    """Wait until the running first turn's provider session is durable; its reference."""
    return wait_until(
        lambda: query(
            stack.database_url,
            "SELECT session_ref FROM run_turns WHERE run_id = $1 AND number = 1",
            uuid.UUID(run_id),
        )[0]["session_ref"],
        WAIT,
        message="the session reported while the turn runs",
    )


def kill_everything(stack, start_runner: Callable[[], Any]) -> None:
    """SIGKILL the control plane, the runner and all it started; start the first two again."""
    runner = psutil.Process(stack.runner.proc.pid)
    started = runner.children(recursive=True)
    assert started, "the runner started no provider process"
    stack.servers[0].kill()
    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    for proc in started:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGKILL)
    psutil.wait_procs(started, timeout=10)
    stack.start_server()
    start_runner()


def turns(stack, run_id: str) -> list[dict[str, Any]]:
    return query(
        stack.database_url,
        "SELECT number, kind, status, session_ref FROM run_turns WHERE run_id = $1 ORDER BY number",
        uuid.UUID(run_id),
    )


def assert_resumed_once(stack, ctx, run_id: str) -> dict:
    """The run succeeded in a continuation of the lost turn's session, one comment."""
    run = stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), (run, stack.runner.tail())
    rows = turns(stack, run_id)
    assert [(r["number"], r["kind"], r["status"]) for r in rows] == [
        (1, "initial", "lost"),
        (2, "continuation", "completed"),
    ], rows
    assert rows[0]["session_ref"] and rows[1]["session_ref"] == rows[0]["session_ref"], rows
    return assert_succeeded_once(stack, ctx, run, BEFORE)


def assert_retried_fresh_once(stack, ctx, run_id: str) -> dict:
    """The run succeeded in a fresh retry (the CLI cannot resume), one comment."""
    run = stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), (run, stack.runner.tail())
    rows = turns(stack, run_id)
    assert [(r["number"], r["kind"], r["status"]) for r in rows] == [
        (1, "initial", "lost"),
        (2, "fresh_retry", "completed"),
    ], rows
    return assert_succeeded_once(stack, ctx, run, BEFORE)


def assert_no_second_look(endpoint, model: str) -> None:
    """The model asked for the task once, and each scripted step was served once."""
    requests = endpoint.scripted(model)
    assert [r.step for r in requests] == list(range(len(requests))), [r.step for r in requests]
    assert endpoint.exhausted(model) == []
