"""The real Codex CLI (pinned, from npm) driven by Paperclip, the model a scripted endpoint.

Control plane, runner and ``codex app-server`` are separate processes; the
model is :class:`tests.support.model_endpoint.ModelEndpoint` on 127.0.0.1, so
every turn is deterministic and offline. Restarts are SIGKILLs.
"""

from __future__ import annotations

import contextlib
import json
import uuid

import pytest

from tests.engine.test_restarts import assert_log_is_clean
from tests.providers.codex.conftest import real_agent_config, start_real
from tests.providers.report_nudge import (
    NO_NUDGES,
    assert_failed_unnudged,
    assert_nudged_once,
    unreported_steps,
)
from tests.providers.scenarios import assert_succeeded_once, assert_usage_recorded, set_price
from tests.support.db import HeldLock, query
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import (
    FunctionCall,
    Usage,
    calls,
    codex_shell,
    mcp_tool,
    say,
)
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.codex_cli]

WAIT = 90.0


def read_comment_finish(body: str, **finish_options: object) -> list:
    """get_task_context, post_comment, finish, then a closing message."""
    return [
        calls(mcp_tool("get_task_context", {})),
        calls(mcp_tool("post_comment", {"body": body})),
        calls(mcp_tool("finish", {"outcome": "done", "summary": "Fixed it"}), **finish_options),
        say("Done."),
    ]


def new_agent(stack, endpoint: ModelEndpoint, steps: list, **config: object) -> dict:
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    endpoint.script(model, steps)
    ctx = stack.setup_issue({}, provider_config=real_agent_config(endpoint, model, **config))
    ctx["model"] = model
    return ctx


def tool_items(stack, ctx, run) -> list[dict]:
    return [
        e["payload"]["item"]
        for e in stack.events(ctx, run["id"])
        if e["type"] == "item/completed"
        and e["payload"].get("item", {}).get("type") == "mcpToolCall"
    ]


def test_a_new_agent_with_only_a_model_endpoint_calls_our_tools_and_succeeds(
    real_stack, model_endpoint
):
    """Issue 9's regression: before the fix every call failed "requires approval"."""
    start_real(real_stack)
    ctx = new_agent(real_stack, model_endpoint, read_comment_finish("Looking at it."))
    real_stack.assign(ctx)
    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT)

    items = tool_items(real_stack, ctx, run)
    assert [(i["tool"], i["status"]) for i in items] == [
        ("get_task_context", "completed"),
        ("post_comment", "completed"),
        ("finish", "completed"),
    ], [i.get("error") for i in items]
    assert_succeeded_once(real_stack, ctx, run, "Looking at it.")
    # The model saw the task through the tool, and got every result back.
    requests = model_endpoint.scripted(ctx["model"])
    assert len(requests) == 4 and model_endpoint.exhausted(ctx["model"]) == []
    assert "Fix the build" in json.dumps(requests[1].tool_outputs())
    offered = set(requests[0].tool_names())
    assert {f"mcp__paperclip/{t}" for t in ("get_task_context", "finish", "block")} <= offered
    # What a run must not offer the model: sub-agents, web search, goals.
    assert not {n for n in offered if "agent" in n or "goal" in n or "web_search" in n}


def test_the_usage_the_control_plane_records_is_what_the_model_sent(real_stack, model_endpoint):
    """Each model response's tokens, from Codex's token-usage notifications, recorded once
    and priced from the price table (Codex reports no cost)."""
    start_real(real_stack)
    steps = read_comment_finish("Looking at it.")
    steps[1] = calls(*steps[1].outputs, usage=Usage(48_000, 310, 40_000, 120))
    ctx = new_agent(real_stack, model_endpoint, steps)
    set_price(real_stack, ctx["model"])
    real_stack.assign(ctx)
    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT)

    assert_succeeded_once(real_stack, ctx, run, "Looking at it.")
    sent = model_endpoint.usage_sent(ctx["model"])
    assert len(sent) == len(steps) and sent[1] == Usage(48_000, 310, 40_000, 120)
    assert_usage_recorded(real_stack, ctx, run["id"], sent)


@pytest.mark.parametrize(
    ("policy", "asked"), [("never", False), ("on-request", True)], ids=["never", "on-request"]
)
def test_shell_runs_in_the_sandbox_and_an_escalation_is_declined_without_hanging(
    real_stack, model_endpoint, policy, asked
):
    start_real(real_stack)
    steps = [
        calls(codex_shell("echo sandboxed > note.txt && cat note.txt")),
        calls(codex_shell("touch /etc/paperclip-escalated", escalate=True)),
        *read_comment_finish("Shell checked.")[1:],
    ]
    ctx = new_agent(real_stack, model_endpoint, steps, approval_policy=policy)
    real_stack.assign(ctx)
    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(real_stack, ctx, run, "Shell checked.")

    events = real_stack.events(ctx, run["id"])
    commands = [
        e["payload"]["item"]
        for e in events
        if e["type"] == "item/completed" and e["payload"]["item"].get("type") == "commandExecution"
    ]
    assert commands[0]["exitCode"] == 0 and "sandboxed" in commands[0]["aggregatedOutput"]
    types = [e["type"] for e in events]
    assert ("item/commandExecution/requestApproval" in types) is asked
    if asked:
        assert commands[1]["status"] == "declined"
        assert "serverRequest/resolved" in types
    # The model was told, and went on.
    escalation_answer = json.dumps(model_endpoint.scripted(ctx["model"])[2].tool_outputs()[-1])
    assert "reject" in escalation_answer.lower()


@pytest.mark.long_run
def test_sigkill_of_the_control_plane_while_the_model_is_in_a_slow_step(real_stack, model_endpoint):
    start_real(real_stack)
    steps = read_comment_finish("Before the restart.", hold="slow-finish")
    ctx = new_agent(real_stack, model_endpoint, steps, mcp_tool_timeout_seconds=300)
    set_price(real_stack, ctx["model"])
    real_stack.assign(ctx)
    gate = model_endpoint.gate("slow-finish")
    gate.wait_reached(WAIT)

    real_stack.servers[0].kill()
    real_stack.start_server()
    gate.release()  # the model answers while the restarted control plane adopts the run

    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(real_stack, ctx, run, "Before the restart.")
    assert run["controller_epoch"] >= 2
    assert_log_is_clean(real_stack, ctx, run)
    # Usage reported before the restart and replayed after it is counted once.
    assert_usage_recorded(real_stack, ctx, run["id"], model_endpoint.usage_sent(ctx["model"]))


@pytest.mark.long_run
def test_sigkill_of_the_control_plane_while_a_tool_call_waits_for_its_answer(
    real_stack, model_endpoint
):
    start_real(real_stack)
    ctx = new_agent(
        real_stack,
        model_endpoint,
        read_comment_finish("Exactly once."),
        mcp_tool_timeout_seconds=300,
    )
    issue_id = uuid.UUID(ctx["issue"]["id"])
    # Comment writers wait: post_comment is admitted, then stuck inside its transaction.
    lock = HeldLock(real_stack.database_url, "LOCK TABLE comments IN EXCLUSIVE MODE").__enter__()
    try:
        real_stack.assign(ctx)

        def admitted():
            rows = query(
                real_stack.database_url,
                "SELECT c.status FROM tool_calls c JOIN runs r ON r.id = c.run_id "
                "WHERE r.issue_id = $1 AND c.tool = 'post_comment'",
                issue_id,
            )
            return rows and rows[0]["status"] == "pending"

        wait_until(admitted, WAIT, message="post_comment journaled and pending")
        real_stack.servers[0].kill()
    finally:
        lock.release()
    real_stack.start_server()

    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(real_stack, ctx, run, "Exactly once.")
    assert_log_is_clean(real_stack, ctx, run)


def steer_over_api(stack, ctx, run_id: str, text: str) -> str:
    """Post ``text`` as a person's comment and steer the run with it; the comment's id."""
    company = ctx["company"]["id"]
    with stack.api() as api:
        comment = api.post(
            f"/companies/{company}/issues/{ctx['issue']['id']}/comments", json={"body": text}
        ).json()
        sent = api.post(
            f"/companies/{company}/runs/{run_id}/steer", json={"comment_id": comment["id"]}
        )
    assert sent.status_code == 202 and sent.json()["delivery"] == "steer", sent.text
    wait_until(
        lambda: any(
            e["type"] in ("steering_acknowledgement", "steer_refused")
            for e in stack.events(ctx, run_id)
        ),
        WAIT,
        message="the runner's answer to the steer",
    )
    return comment["id"]


def user_message_texts(stack, ctx, run_id: str) -> list[tuple[int, str]]:
    """(turn, text) of each userMessage item Codex recorded, in log order."""
    return [
        (e["turn"], " ".join(p.get("text", "") for p in e["payload"]["item"]["content"]))
        for e in stack.events(ctx, run_id)
        if e["type"] == "item/completed" and e["payload"]["item"].get("type") == "userMessage"
    ]


def slow_shell(seconds: int) -> FunctionCall:
    """Codex's shell tool running ``sleep``: the model waits for it, as for a slow command."""
    return FunctionCall("exec_command", {"cmd": f"sleep {seconds}", "yield_time_ms": 30_000})


def command_running(stack, ctx, run_id: str) -> bool:
    return any(
        e["type"] == "item/started" and e["payload"]["item"].get("type") == "commandExecution"
        for e in stack.events(ctx, run_id)
    )


@pytest.mark.long_run
def test_a_steer_enters_the_running_turn_of_the_real_cli(real_stack, model_endpoint):
    start_real(real_stack)
    steps = read_comment_finish("Steered.")
    # The model is answering (held) when the steer arrives.
    steps.insert(1, say("Reading the task.", hold="steer-here"))
    ctx = new_agent(real_stack, model_endpoint, steps)
    real_stack.assign(ctx)
    gate = model_endpoint.gate("steer-here")
    gate.wait_reached(WAIT)
    (run,) = real_stack.runs(ctx)

    steer_id = steer_over_api(real_stack, ctx, run["id"], "Also mention the changelog.")
    gate.release()
    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(real_stack, ctx, run, "Steered.")

    events = real_stack.events(ctx, run["id"])
    acks = [e for e in events if e["type"] == "steering_acknowledgement"]
    assert [a["payload"]["message_id"] for a in acks] == [steer_id]
    # Read by the model in the same turn: a userMessage item, and in its next request.
    user_texts = [
        part.get("text")
        for e in events
        if e["type"] == "item/completed" and e["payload"]["item"].get("type") == "userMessage"
        for part in e["payload"]["item"]["content"]
    ]
    assert "Also mention the changelog." in user_texts
    assert [e["type"] for e in events].count("turn/completed") == 1
    # The steered turn's own requests (steps 2 to the last): the comment also wakes the
    # agent, and the next run's request (past the script) may already have come.
    after = [r for r in model_endpoint.scripted(ctx["model"]) if 2 <= r.step < len(steps)]
    seen = [(r.step, "Also mention the changelog." in r.user_texts()) for r in after]
    assert seen == [(step, True) for step in range(2, len(steps))], seen


def restart_steps() -> list:
    """Turn 1 comments, then the model is slow (held) when its process goes away; the
    restart continuation (turn 2, the same thread resumed) finishes."""
    return [
        calls(mcp_tool("get_task_context", {})),
        calls(mcp_tool("post_comment", {"body": "Before the loss."})),
        say("Thinking about the fix.", hold="slow-step"),  # the interrupted request
        calls(mcp_tool("finish", {"outcome": "done", "summary": "Fixed after the loss"})),
        say("Done after the loss."),
    ]


def codex_processes(stack) -> list:
    """The real CLI's processes (the npm wrapper and its native child) under the runner folder."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            if "app-server" in (proc.info["cmdline"] or []) and str(stack.runner_folder) in str(
                (proc.info["environ"] or {}).get("CODEX_HOME", "")
            ):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def assert_resumed_the_thread(stack, ctx, run) -> None:
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    rows = query(
        stack.database_url,
        "SELECT number, kind, status, session_ref FROM run_turns WHERE run_id = $1 ORDER BY number",
        uuid.UUID(run["id"]),
    )
    assert [(r["number"], r["kind"], r["status"]) for r in rows] == [
        (1, "initial", "lost"),
        (2, "continuation", "completed"),
    ], rows
    assert rows[0]["session_ref"] and rows[1]["session_ref"] == rows[0]["session_ref"]
    assert_succeeded_once(stack, ctx, run, "Before the loss.")


def test_sigkill_of_the_runner_mid_turn_resumes_the_codex_thread(real_stack, model_endpoint):
    import signal

    start_real(real_stack)
    ctx = new_agent(real_stack, model_endpoint, restart_steps(), mcp_tool_timeout_seconds=300)
    real_stack.assign(ctx)
    gate = model_endpoint.gate("slow-step")
    gate.wait_reached(WAIT)

    real_stack.runner.proc.send_signal(signal.SIGKILL)
    real_stack.runner.proc.wait(10)
    gate.release()  # the answer goes to a provider that is gone
    start_real_runner_again(real_stack)

    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
    assert_resumed_the_thread(real_stack, ctx, run)
    assert len({p.pid for p in codex_processes(real_stack)}) <= 2  # one wrapper + native


@pytest.mark.long_run
def test_sigkill_of_the_codex_process_alone_resumes_the_codex_thread(real_stack, model_endpoint):
    import os
    import signal

    start_real(real_stack)
    ctx = new_agent(real_stack, model_endpoint, restart_steps(), mcp_tool_timeout_seconds=300)
    real_stack.assign(ctx)
    gate = model_endpoint.gate("slow-step")
    gate.wait_reached(WAIT)

    # The whole process group: the npm wrapper and the native binary it started.
    [group] = {os.getpgid(p.pid) for p in codex_processes(real_stack)}
    os.killpg(group, signal.SIGKILL)
    gate.release()

    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
    assert_resumed_the_thread(real_stack, ctx, run)


def start_real_runner_again(stack) -> None:
    """The runner's next process, on the same folder (and so the same Codex homes)."""
    from tests.providers.codex.conftest import MODEL_KEY_VARIABLE

    stack.start_runner(
        launch={"codex": {"default": [str(stack.codex_cli), "app-server"]}},
        env={MODEL_KEY_VARIABLE: "scripted-dummy-key", "HOME": str(stack.tmp / "home")},
    )


STEER = "Also mention the changelog in your summary."


@pytest.mark.long_run
def test_a_steer_during_a_slow_command_is_read_in_the_same_turn(real_stack, model_endpoint):
    start_real(real_stack)
    steps = [
        calls(mcp_tool("get_task_context", {})),
        calls(slow_shell(8)),
        *read_comment_finish("Steered.")[1:],
    ]
    ctx = new_agent(real_stack, model_endpoint, steps)
    real_stack.assign(ctx)
    wait_until(lambda: real_stack.runs(ctx), WAIT, message="the run")
    run_id = real_stack.runs(ctx)[0]["id"]
    wait_until(lambda: command_running(real_stack, ctx, run_id), WAIT, message="the command")
    steer_over_api(real_stack, ctx, run_id, STEER)
    assert STEER not in " ".join(t for _, t in user_message_texts(real_stack, ctx, run_id))

    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(real_stack, ctx, run, "Steered.")
    # Read when the command ended, in the same (only) turn, by the model's next request.
    assert [
        (t, text) for t, text in user_message_texts(real_stack, ctx, run_id) if STEER in text
    ] == [(1, STEER)]
    requests = model_endpoint.scripted(ctx["model"])
    assert STEER not in " ".join(requests[1].user_texts())
    assert all(STEER in " ".join(r.user_texts()) for r in requests[2:])
    events = real_stack.events(ctx, run_id)
    assert [e["type"] for e in events].count("turn/completed") == 1
    # The acknowledgement is in the log before the item that reads it.
    [ack] = [e["seq"] for e in events if e["type"] == "steering_acknowledgement"]
    [read] = [
        e["seq"]
        for e in events
        if e["type"] == "item/completed"
        and e["payload"]["item"].get("type") == "userMessage"
        and STEER in json.dumps(e["payload"]["item"]["content"])
    ]
    assert ack < read


@pytest.mark.long_run
def test_a_steer_acknowledged_before_a_restart_is_answered_once_after_recovery(
    real_stack, model_endpoint
):
    import os
    import signal

    start_real(real_stack)
    steps = [
        calls(mcp_tool("get_task_context", {})),
        calls(slow_shell(60)),  # the runner and Codex die during it
        calls(mcp_tool("post_comment", {"body": "Handled the steer."})),
        calls(mcp_tool("finish", {"outcome": "done", "summary": "Fixed after the loss"})),
        say("Done after the loss."),
    ]
    ctx = new_agent(real_stack, model_endpoint, steps, mcp_tool_timeout_seconds=300)
    real_stack.assign(ctx)
    wait_until(lambda: real_stack.runs(ctx), WAIT, message="the run")
    run_id = real_stack.runs(ctx)[0]["id"]
    wait_until(lambda: command_running(real_stack, ctx, run_id), WAIT, message="the command")
    comment_id = steer_over_api(real_stack, ctx, run_id, STEER)
    # Acknowledged, not read: the model is waiting for the command.
    assert STEER not in " ".join(t for _, t in user_message_texts(real_stack, ctx, run_id))

    groups = {os.getpgid(p.pid) for p in codex_processes(real_stack)}
    real_stack.runner.proc.send_signal(signal.SIGKILL)
    real_stack.runner.proc.wait(10)
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    start_real_runner_again(real_stack)

    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT * 2)
    assert (run["id"], run["status"]) == (run_id, "succeeded"), (run, real_stack.runner.tail())
    rows = query(
        real_stack.database_url,
        "SELECT number, kind, status, input FROM run_turns WHERE run_id = $1 ORDER BY number",
        uuid.UUID(run_id),
    )
    assert [(r["number"], r["kind"], r["status"]) for r in rows] == [
        (1, "initial", "lost"),
        (2, "continuation", "completed"),
    ]
    carried = (
        json.loads(rows[1]["input"]) if isinstance(rows[1]["input"], str) else rows[1]["input"]
    )
    assert [m["id"] for m in carried["steeredMessages"]] == [comment_id]
    # Exactly once after recovery: the continuation's request has the steer once, and the
    # resumed thread did not hold it already.
    requests = model_endpoint.scripted(ctx["model"])
    after = [r for r in requests if r.step is not None and r.step >= 2]
    assert after and " ".join(after[0].user_texts()).count(STEER) == 1, after[0].user_texts()
    assert [t for t, text in user_message_texts(real_stack, ctx, run_id) if STEER in text] == [2]


@pytest.mark.long_run
def test_a_turn_ended_in_prose_is_nudged_in_its_thread_and_reports(real_stack, model_endpoint):
    """Issue 53: the model ends its first turn without finish; the same Codex thread gets the
    report nudge, the model reports, and the run succeeds with its one comment."""
    start_real(real_stack)
    ctx = new_agent(real_stack, model_endpoint, unreported_steps(mcp_tool_of))
    real_stack.assign(ctx)
    assert_nudged_once(real_stack, ctx, model_endpoint)


@pytest.mark.long_run
def test_with_the_nudges_at_0_a_turn_ended_in_prose_fails_the_run(real_stack, model_endpoint):
    real_stack.extra_env.update(NO_NUDGES)
    start_real(real_stack)
    ctx = new_agent(real_stack, model_endpoint, unreported_steps(mcp_tool_of))
    real_stack.assign(ctx)
    assert_failed_unnudged(real_stack, ctx, model_endpoint)


def mcp_tool_of(name: str, arguments: dict | None = None) -> FunctionCall:
    return mcp_tool(name, arguments or {})
