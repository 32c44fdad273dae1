"""A slow hook on a real run: cut off after its budget, named, and the engine goes on.

The plugins are installed distributions on the control plane's path; each
slow hook waits on a gate file the test creates at its end (or gives up after
two minutes), far longer than any run here may take.
"""

from __future__ import annotations

import time

import httpx
import pytest

from tests.engine.test_hooks_on_real_runs import finish, install, start
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

BUDGET = "0.5"

WAIT_FOR_THE_GATE = """
import os
import time
from pathlib import Path


def wait_for_the_gate():
    gate, deadline = Path(os.environ["SLOW_HOOK_GATE"]), time.monotonic() + 120
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
"""

SLOW_TERMINAL_GUARD = (
    WAIT_FOR_THE_GATE
    + """
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.completion import CompletionStage

@hookimpl
def paperclip_check_completion(check):
    if check.stage is CompletionStage.TERMINAL:
        wait_for_the_gate()
    return None
"""
)

SLOW_TASK_SECTION = (
    WAIT_FOR_THE_GATE
    + """
from dataclasses import replace
from paperclip_hookspecs import hookimpl

@hookimpl(wrapper=True)
def paperclip_render_task_markdown(task, options):
    section = yield
    wait_for_the_gate()
    return replace(section, text=section.text + "\\n\\nWords of a slow plugin.")
"""
)


@pytest.fixture
def gate(stack):
    path = stack.tmp / "gate"
    stack.extra_env |= {
        "PAPERCLIP_PLUGINS_HOOK_BUDGET_SECONDS": BUDGET,
        "SLOW_HOOK_GATE": str(path),
    }
    yield path
    path.touch()  # every slow hook returns


def logged(stack, text: str) -> str:
    """The first line of the control plane's log that says ``text`` (waited for)."""

    def line() -> str | None:
        lines = stack.servers[0].log_path.read_text().splitlines()
        return next((entry for entry in lines if text in entry), None)

    return wait_until(line, 10, message=f"{text!r} in the log")


def test_paperclip_check_completion_a_slow_guard_fails_the_run_with_plugin_timeout(stack, gate):
    install(stack, "slow-guard", SLOW_TERMINAL_GUARD)
    ctx = start(stack, {"turns": [[finish(), {"message": "done"}]]})

    run = stack.wait_for_terminal_run(ctx, timeout=60)
    # Accepted inside the turn; after it, the guard did not answer in time: a report
    # no guard could check is not accepted.
    [accepted] = stack.tool_calls(ctx, run["id"], "finish")
    assert accepted["status"] == "settled" and not accepted["is_error"]
    assert (run["status"], run["error_code"]) == ("failed", "plugin_timeout")
    assert "slow-guard" in run["error_message"] and "0.5 s" in run["error_message"]
    assert not gate.exists()  # the guard's call is still running, cut off

    # The engine was not held: it answers at once while the hook still runs.
    started = time.monotonic()
    assert httpx.get(f"{stack.url()}/api/health", timeout=5).status_code == 200
    assert time.monotonic() - started < 2
    line = logged(stack, "overran its budget")
    assert "slow-guard" in line and "paperclip_check_completion" in line


def test_paperclip_render_task_markdown_a_slow_section_is_left_out_and_the_run_goes_on(stack, gate):
    install(stack, "slow-section", SLOW_TASK_SECTION)
    ctx = start(stack, {"turns": [[finish(), {"message": "done"}]]})

    run = stack.wait_for_terminal_run(ctx, timeout=60)
    assert run["status"] == "succeeded", run["error_message"]
    # The prompt the run got is the built-in one: the plugin's words are not in it.
    prompt = run["execution_input"]["modelEnvelope"]["prompt"]
    assert "Fix the build" in prompt and "slow plugin" not in prompt
    line = logged(stack, "is left out of")
    assert "slow-section" in line and "paperclip_render_task_markdown" in line
