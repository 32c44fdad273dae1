"""Agent chat with the real Codex CLI (pinned, from npm), the model a scripted endpoint.

A person's message starts a conversation turn; the real ``codex app-server``
runs it through Paperclip's tools; the final message is the chat reply, once.
A second message is the next turn (a run of its own); a question card raised
by the agent presents that turn itself.
"""

from __future__ import annotations

import uuid

import pytest

from tests.engine.chat_stack import (
    conversation,
    interactions,
    messages,
    open_chat,
    presented_run,
    replies,
    say,
)
from tests.providers.codex.conftest import real_agent_config, start_real
from tests.support.model_endpoint_script import calls, mcp_tool
from tests.support.model_endpoint_script import say as model_says
from tests.support.processes import wait_until

pytestmark = [
    pytest.mark.process,
    pytest.mark.installed_plugins,
    pytest.mark.codex_cli,
    pytest.mark.long_run,
]

WAIT = 90.0


def test_a_chat_round_trip_with_the_real_codex_cli(real_stack, model_endpoint):
    start_real(real_stack)
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    model_endpoint.script(
        model,
        [
            # Turn 1: it reads the task and answers.
            calls(mcp_tool("get_task_context", {})),
            calls(mcp_tool("finish", {"outcome": "done", "summary": "Answered"})),
            model_says("The build fails on the lint job."),
            # Turn 2: it asks a question through a card and yields.
            calls(
                mcp_tool(
                    "request_human_input",
                    {"kind": "question", "title": "Fix the lint job or skip it?"},
                )
            ),
            calls(mcp_tool("finish", {"outcome": "yielded", "summary": "Asked"})),
            model_says("I asked you how to go on."),
        ],
    )
    ctx = real_stack.setup_issue({}, provider_config=real_agent_config(model_endpoint, model))
    open_chat(real_stack, ctx)

    say(real_stack, ctx, "Why is the build red?")
    first = presented_run(real_stack, ctx, timeout=WAIT)
    assert first["status"] == "succeeded", (first, real_stack.runner.tail())
    assert first["status_reason"] == "conversation_turn_finished"
    assert first["presentation"]["presentationDecision"] == "answer"
    assert replies(real_stack, ctx) == ["The build fails on the lint job."]
    assert conversation(real_stack, ctx)["state"] == "idle"

    say(real_stack, ctx, "Please fix it.")
    second = wait_until(
        lambda: next(
            (r for r in real_stack.runs(ctx) if r["id"] != first["id"] and r["presentation"]),
            None,
        ),
        WAIT,
        message="the second turn presented",
    )
    assert second["status"] == "succeeded", (second, real_stack.runner.tail())
    assert second["status_reason"] == "governed_response_waiting"
    assert second["presentation"]["presentationDecision"] == "none"
    assert second["presentation"]["reason"] == "committed_conversation_interaction_presented"
    [card] = interactions(real_stack, ctx)
    assert (card["kind"], card["status"], card["run_id"]) == ("question", "pending", second["id"])
    assert conversation(real_stack, ctx)["state"] == "waiting"
    assert [m["role"] for m in messages(real_stack, ctx)] == ["user", "agent", "user"]
    assert [m["run_id"] for m in messages(real_stack, ctx) if m["role"] == "agent"] == [first["id"]]
