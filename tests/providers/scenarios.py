"""The scenarios every provider runs through Paperclip, against its real CLI or its fake.

Control plane, runner and provider are separate processes; a real CLI's model
is :class:`tests.support.model_endpoint.ModelEndpoint` on 127.0.0.1. Each
scenario ends with the same checks: the run succeeded, its comment was posted
exactly once, its final prose presented once, every tool call journaled and
settled once, the event log without gaps or duplicates. What a run used is
checked against what the endpoint sent (:func:`assert_usage_recorded`).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from paperclip_hookspecs.completion import READ_CURRENT_WAKE_COMMENTS

from paperclip.testing import connect
from tests.support.db import query
from tests.support.model_endpoint_script import FunctionCall, Step, Usage, calls, reply, say, total
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


# The completion guard (seed 000): a wake comment longer than the prompt shows must be read
# through ``read_current_wake_comments`` before ``finish`` is accepted; the model is told so
# by the refused ``finish`` and corrects itself in the same turn.

LONG_COMMENT = "Check every item before you finish.\n" + "".join(
    f"- item {n}: confirm the build step {n} still passes.\n" for n in range(1, 251)
)
"""Longer than the prompt's 8,000 characters per comment: the wake requires a complete read."""
GUARD_NOTE = "Reading the thread."
FINISH_ARGUMENTS = {"outcome": "done", "summary": "Answered every comment."}
GUARD_ANSWER = "All read; done."
GUARD_JOURNAL = [
    ("post_comment", False),
    ("finish", True),
    (READ_CURRENT_WAKE_COMMENTS, False),
    ("finish", False),
]
"""The run's tool calls: a note, the refused report, the one page, the accepted report."""

GUARD_FAKE_SCRIPT = [
    {"call_tool": {"name": "post_comment", "arguments": {"body": GUARD_NOTE}}},
    {"call_tool": {"name": "finish", "arguments": FINISH_ARGUMENTS}},
    {"call_tool": {"name": READ_CURRENT_WAKE_COMMENTS, "arguments": {}}},
    {"call_tool": {"name": "finish", "arguments": FINISH_ARGUMENTS}},
    {"message": GUARD_ANSWER},
]
"""A fake's model: reports too early, reads what the correction names (one page), reports again."""


def guard_model_steps(tool: Callable[..., FunctionCall]) -> list[Step]:
    """A scripted model for a real CLI: it reports too early, then does what each tool result
    says (the correction names the reader and its cursor, a page its ``next_cursor``) until
    nothing is left to read, reports again, and closes. ``tool`` names a tool the CLI's way."""

    def follow(received: Any) -> Step:
        result = last_tool_result(received)
        correction = (result.get("error") or {}).get("correction")
        if correction:
            cursor = correction.get("cursor")
            return calls(tool(correction["instruction"], {"cursor": cursor} if cursor else {}))
        if result.get("next_cursor"):
            return calls(tool(READ_CURRENT_WAKE_COMMENTS, {"cursor": result["next_cursor"]}))
        return calls(tool("finish", FINISH_ARGUMENTS))

    return [
        calls(tool("post_comment", {"body": GUARD_NOTE})),
        calls(tool("finish", FINISH_ARGUMENTS)),
        reply(follow),  # the correction: read
        reply(follow),  # the last page: report again
        say(GUARD_ANSWER),
    ]


def last_tool_result(received: Any) -> Mapping[str, Any]:
    """The newest tool result the CLI passed to the model, as the JSON object our tool returned
    (each CLI wraps it its own way: plain text, text parts, or an error message)."""
    item = received.tool_outputs()[-1]
    found = _result_in(item.get("output", item.get("content")))
    assert found is not None, json.dumps(item)[:500]
    return found


def _result_in(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        if "error" in value or "next_cursor" in value or "accepted" in value:
            return value
        value = list(value.values())
    if isinstance(value, list):
        return next((r for r in map(_result_in, value) if r is not None), None)
    if isinstance(value, str):
        decoder, start = json.JSONDecoder(), value.find("{")
        while start >= 0:
            try:
                found = _result_in(decoder.raw_decode(value, start)[0])
            except ValueError:
                found = None
            if found is not None:
                return found
            start = value.find("{", start + 1)
    return None


def post_wake_comment(stack, ctx) -> str:
    """A person's comment on the issue, before it is assigned: the run's current wake comment."""
    base = f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/comments"
    with stack.api() as api:
        response = api.post(base, json={"body": LONG_COMMENT})
        assert response.status_code == 201, response.text
        return response.json()["id"]


def run_guard_correction(stack, ctx) -> dict:
    """Wake the agent for a long comment; the run succeeds after the same-turn correction."""
    comment_id = post_wake_comment(stack, ctx)
    stack.assign(ctx)
    run = stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert (run["status"], run["error_code"]) == ("succeeded", None), stack.runner.tail()
    # One accepted report: the note and the final prose posted once each, the task done.
    run = assert_succeeded_once(stack, ctx, run, GUARD_NOTE)
    assert run["answer"] == GUARD_ANSWER
    assert run["result"]["outcome"] == "done"
    assert [r["id"] for r in stack.runs(ctx)] == [run["id"]]

    rows = query(
        stack.database_url,
        "SELECT tool, is_error, result FROM tool_calls WHERE run_id = $1 ORDER BY id",
        uuid.UUID(run["id"]),
    )
    journaled = [(r["tool"], r["is_error"]) for r in rows]
    assert journaled == GUARD_JOURNAL, journaled
    refused, page, accepted = (json.loads(r["result"]) for r in rows[1:])
    error = refused["error"]
    assert (error["code"], error["reason"]) == (READ_CURRENT_WAKE_COMMENTS, "unread")
    assert error["correction"]["instruction"] == READ_CURRENT_WAKE_COMMENTS
    assert [c["id"] for c in page["comments"]] == [comment_id] and page["complete"]
    assert page["comments"][0]["body"] == LONG_COMMENT.strip()
    assert accepted["accepted"] and accepted["outcome"] == "done"
    return run


def assert_model_followed_the_correction(endpoint, model: str) -> None:
    """Through the CLI, the model was shown the refusal with its correction, then the page."""
    requests = endpoint.scripted(model)
    assert len(requests) == 5 and endpoint.exhausted(model) == []
    refusal = last_tool_result(requests[2])["error"]
    assert (refusal["code"], refusal["correction"]["instruction"]) == (
        READ_CURRENT_WAKE_COMMENTS,
        READ_CURRENT_WAKE_COMMENTS,
    )
    page = last_tool_result(requests[3])
    assert page["complete"] and page["next_cursor"] is None
    assert last_tool_result(requests[4])["accepted"]


# Usage: what the control plane recorded of a run, against what the model endpoint sent.

USAGE_COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")
PRICE = {
    "input_per_million_micros": 2_000_000,
    "cached_input_per_million_micros": 1_000_000,
    "output_per_million_micros": 3_000_000,
}
"""Whole micro-units per token (2, 1 and 3), so a run's cost is exact to the unit."""


def set_price(stack, model: str) -> None:
    """Put :data:`PRICE` in the price table for ``model`` (no provider here says a cost)."""
    with stack.api() as api:
        response = api.put(f"/prices/{model}", json=PRICE)
        assert response.status_code == 200, response.text


def priced(counts: dict[str, int]) -> int:
    """What :data:`PRICE` makes of these counts: cached input tokens at their own price."""
    per = {k: v // 1_000_000 for k, v in PRICE.items()}
    fresh = counts["input_tokens"] - counts["cached_input_tokens"]
    return (
        fresh * per["input_per_million_micros"]
        + counts["cached_input_tokens"] * per["cached_input_per_million_micros"]
        + counts["output_tokens"] * per["output_per_million_micros"]
    )


def cost_events(stack, ctx, run_id: str) -> list[dict[str, Any]]:
    """The run's cost events, as ``GET …/cost-events?run_id=`` pages them."""
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"run_id": run_id, "limit": 100}
    with stack.api() as api:
        while True:
            response = api.get(f"/companies/{ctx['company']['id']}/cost-events", params=params)
            assert response.status_code == 200, response.text
            page = response.json()
            items += page["items"]
            if page["next_cursor"] is None:
                return items
            params["cursor"] = page["next_cursor"]


def assert_usage_recorded(
    stack,
    ctx,
    run_id: str,
    sent: list[Usage],
    *,
    per_response: bool = True,
    runs: int = 1,
    reasoning: bool = True,
) -> list[dict[str, Any]]:
    """The control plane recorded the run's usage as the endpoint sent it, once: the run's
    sums (``GET …/runs/{id}``'s ``usage``), and its cost events, one per model response
    (``per_response``; else one per gateway run, summing its responses: ``runs`` of them),
    each priced from :data:`PRICE`. ``reasoning``: the provider reports reasoning tokens apart (Pi does not:
    they are within the output). Returns the cost events."""
    assert sent, "the endpoint sent no usage"
    expected = total(sent)
    if not reasoning:
        expected["reasoning_tokens"] = 0

    def run_usage() -> dict[str, Any]:
        with stack.api() as api:
            response = api.get(f"/companies/{ctx['company']['id']}/runs/{run_id}")
        assert response.status_code == 200, response.text
        return response.json()["usage"]

    def recorded() -> dict[str, Any] | None:
        usage = run_usage()
        return usage if {k: usage[k] for k in USAGE_COUNTS} == expected else None

    try:
        usage = wait_until(recorded, WAIT, 0.2, "the run's usage to be recorded")
    except TimeoutError:
        raise AssertionError(f"recorded {run_usage()}, the model sent {expected}") from None
    events = cost_events(stack, ctx, run_id)
    assert len({e["key"] for e in events}) == len(events), events  # each response once
    assert {e["model"] for e in events} == {ctx["model"]}
    if per_response:
        counts = [u.as_dict() | ({} if reasoning else {"reasoning_tokens": 0}) for u in sent]
        assert [{k: e[k] for k in USAGE_COUNTS} for e in events] == counts
    else:
        assert len(events) == runs, events
    for event in events:
        assert event["cost_source"] == "priced", event
        assert event["cost_micros"] == priced({k: event[k] for k in USAGE_COUNTS}), event
    assert usage["cost_micros"] == priced(expected) == sum(e["cost_micros"] for e in events)
    return events
