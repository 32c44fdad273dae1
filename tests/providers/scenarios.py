"""The scenarios every provider runs through Paperclip, against its real CLI or its fake.

Control plane, runner and provider are separate processes; a real CLI's model
is :class:`tests.support.model_endpoint.ModelEndpoint` on 127.0.0.1. Each
scenario ends with the same checks: the run succeeded, its comment was posted
exactly once, its final prose presented once, every tool call journaled and
settled once, the event log without gaps or duplicates.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from typing import Any

from paperclip.testing import connect
from tests.support.db import query
from tests.support.processes import wait_until

WAIT = 120.0


def assert_succeeded_once(stack, ctx, run, body: str) -> dict:
    """The run succeeded, posted ``body`` once, and its final prose was presented once."""
    assert run["status"] == "succeeded", (run, stack.runner.tail() if stack.runner else "")
    run = wait_until(lambda: next((r for r in stack.runs(ctx) if r["presentation"]), None), 30)
    presented = run["presentation"]["comment_id"]
    comments = [c for c in stack.comments(ctx) if c["author_agent_id"]]
    assert [c["body"] for c in comments if c["id"] != presented] == [body]
    assert [c["body"] for c in comments if c["id"] == presented] == [run["answer"]]
    with stack.api() as api:
        issue = api.get(f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}").json()
    assert issue["status"] == "done"
    calls = journal(stack, run["id"])
    assert calls and all(c["status"] == "settled" for c in calls), calls
    return run


def journal(stack, run_id: str) -> list[dict[str, Any]]:
    return query(
        stack.database_url,
        "SELECT tool, status, admitted_epoch, settled_epoch, is_error FROM tool_calls "
        "WHERE run_id = $1 ORDER BY id",
        uuid.UUID(run_id),
    )


def assert_each_tool_once(stack, run_id: str) -> None:
    """No tool ran twice: one journal row per tool of the scenario (each is called once)."""
    tools = Counter(c["tool"] for c in journal(stack, run_id))
    assert tools and max(tools.values()) == 1, tools


def assert_log_is_clean(stack, ctx, run) -> list[dict]:
    """The run's event log: numbered without gaps, no event stored twice."""
    events = stack.events(ctx, run["id"])
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    keys = Counter((e["source_instance"], e["source_seq"]) for e in events)
    assert max(keys.values()) == 1
    return events


def enqueue_steer(database_url: str, run_id: str, message_id: str, text: str) -> None:
    """Put a STEER message in the runner's outbox, as the (future) steer API will."""

    async def insert() -> None:
        conn = await connect(database_url)
        try:
            async with conn.transaction():
                runner_id = await conn.fetchval(
                    "SELECT runner_id FROM runs WHERE id = $1", uuid.UUID(run_id)
                )
                seq = await conn.fetchval(
                    "UPDATE runners SET out_seq = out_seq + 1 WHERE id = $1 RETURNING out_seq",
                    runner_id,
                )
                await conn.execute(
                    "INSERT INTO runner_outbox (runner_id, seq, type, run_id, payload) "
                    "VALUES ($1, $2, 'steer', $3, $4::jsonb)",
                    runner_id,
                    seq,
                    uuid.UUID(run_id),
                    json.dumps({"message_id": message_id, "text": text}),
                )
        finally:
            await conn.close()

    asyncio.run(insert())


def steer_and_wait(stack, ctx, run_id: str, message_id: str, text: str) -> str:
    """Steer the running turn; the runner's answer (``steering_acknowledgement`` or ``steer_refused``)."""
    enqueue_steer(stack.database_url, run_id, message_id, text)
    event = wait_until(
        lambda: next(
            (
                e
                for e in stack.events(ctx, run_id)
                if e["type"] in ("steering_acknowledgement", "steer_refused")
                and e["payload"].get("message_id") == message_id
            ),
            None,
        ),
        WAIT,
        message="the runner's answer to the steer",
    )
    return event["type"]


def restart_control_plane(stack) -> None:
    """SIGKILL the control plane (no shutdown code runs) and start it again."""
    stack.servers[0].kill()
    stack.start_server()


def fake_agent(stack, provider: str, script: Any, config: dict[str, Any], model: str) -> dict:
    """An agent on a fake provider: its script is ``<model>.json`` in the stack's script folder."""
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    (stack.script_dir / f"{model}.json").write_text(json.dumps(script))
    ctx = stack.setup_issue({}, provider_config=config, provider=provider)
    ctx["model"] = model
    return ctx


def fake_gate(stack) -> tuple[Any, Any]:
    """Two files: the fake touches the first when it reaches the gate, waits for the second."""
    return stack.tmp / f"reached-{uuid.uuid4().hex[:6]}", stack.tmp / f"go-{uuid.uuid4().hex[:6]}"


def wait_reached(path) -> None:
    wait_until(path.exists, WAIT, message=f"the fake to reach {path.name}")


TOOLS_THEN_FINISH = [
    {"call_tool": {"name": "get_task_context", "arguments": {}}},
    {"call_tool": {"name": "post_comment", "arguments": {"body": "Looking at it."}}},
    {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "Fixed it"}}},
    {"message": "Done."},
]


def restart_script(reached, go) -> list[dict[str, Any]]:
    """Tools, then a slow step (the gate) before ``finish``: a restart lands mid-turn."""
    return [
        {"call_tool": {"name": "get_task_context", "arguments": {}}},
        {"call_tool": {"name": "post_comment", "arguments": {"body": "Before the restart."}}},
        {"touch_file": str(reached)},
        {"wait_for_file": str(go), "timeout": 120},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "Fixed it"}}},
        {"message": "Done."},
    ]


def run_fake_scenarios_tools(stack, ctx) -> dict:
    stack.assign(ctx)
    run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
    run = assert_succeeded_once(stack, ctx, run, "Looking at it.")
    assert run["answer"] == "Done."
    assert_each_tool_once(stack, run["id"])
    return run


def run_fake_restart(stack, ctx, reached, go) -> dict:
    stack.assign(ctx)
    wait_reached(reached)
    restart_control_plane(stack)
    go.write_text("")
    run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert_succeeded_once(stack, ctx, run, "Before the restart.")
    assert run["controller_epoch"] >= 2
    assert_each_tool_once(stack, run["id"])
    assert_log_is_clean(stack, ctx, run)
    return run
