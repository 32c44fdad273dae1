"""A held chat turn's answer reaches the chat exactly once, with or without a restart (seed 002).

Real processes: a control plane, a runner, the fake Codex app-server. The
control plane is SIGKILLed at ``engine.status_decision.before_presentation``:
the turn's status decision has committed (``governed_response_waiting``, the
task ``in_review``) and the live path has not presented the answer. The
restarted control plane's presentation recovery, through the
``paperclip-unpresented-answers`` policy, presents it once.
"""

from __future__ import annotations

import signal

import pytest

from tests.engine.chat_stack import (
    candidates,
    conversation,
    held_turn,
    interactions,
    issue_status,
    link_interaction,
    open_chat,
    past_the_grace,
    presentation_pass_after,
    presented_run,
    replies,
    say,
)

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

POINT = "engine.status_decision.before_presentation"
QUESTION = "Please hire a designer for the launch."


def chat_killed_after_the_status_commit(stack, script: dict, *linked: tuple[str, ...]) -> dict:
    """Link the interactions, open a chat, send one message; the control plane dies after the
    turn's status decision commits, then starts again unarmed (same port and database)."""
    stack.extra_env["PAPERCLIP_FAILPOINTS"] = f"{POINT}=kill"
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(script)
    for kind, *actions in linked:
        link_interaction(stack, ctx, kind, *actions)
    open_chat(stack, ctx)
    say(stack, ctx, QUESTION)
    assert stack.servers[0].proc.wait(90) == -signal.SIGKILL, stack.servers[0].tail()
    assert f"failpoint {POINT} fired" in stack.servers[0].tail(200)
    stack.extra_env.pop("PAPERCLIP_FAILPOINTS")
    stack.start_server()
    return ctx


def assert_presented_once_after_restart(stack, ctx: dict, answer: str, reason: str) -> dict:
    run = presented_run(stack, ctx)
    assert run["status"] == "succeeded"
    assert run["status_reason"] == reason
    assert run["presentation"]["presentationDecision"] == "answer"
    assert run["presentation"]["reason"] == reason
    assert replies(stack, ctx) == [answer]
    assert candidates(stack, run["id"]) == []  # it left the candidate set
    assert conversation(stack, ctx)["state"] == "idle"
    # A second recovery, in a process started again, posts nothing.
    stack.servers[0].kill()
    stack.start_server()
    presentation_pass_after(stack, 0, past_the_grace(stack, run))
    assert replies(stack, ctx) == [answer]
    assert stack.runs(ctx)[0]["presentation"] == run["presentation"]
    return run


def test_paperclip_accept_unpresented_turn_a_pending_approval_yielded_turn_is_presented_once(
    stack,
):
    answer = "I resubmitted the hire approval; it waits for your decision."
    ctx = chat_killed_after_the_status_commit(stack, held_turn(answer), ("approval",))
    assert_presented_once_after_restart(stack, ctx, answer, "governed_response_waiting")
    assert issue_status(stack, ctx) == "in_review"
    assert [i["status"] for i in interactions(stack, ctx)] == ["pending"]


def test_a_revision_requested_approval_yielded_turn_is_presented_once_after_a_restart(stack):
    answer = "I revised the offer as asked; the approval waits for the revision."
    ctx = chat_killed_after_the_status_commit(
        stack, held_turn(answer), ("approval", "request_revision")
    )
    assert_presented_once_after_restart(stack, ctx, answer, "governed_response_waiting")
    assert [i["status"] for i in interactions(stack, ctx)] == ["revision_requested"]


def test_an_execution_stage_yielded_turn_is_presented_once_after_a_restart(stack):
    answer = "The build stage runs now; I will report when it passes."
    ctx = chat_killed_after_the_status_commit(stack, held_turn(answer), ("execution_stage",))
    assert_presented_once_after_restart(stack, ctx, answer, "governed_response_waiting")
    assert issue_status(stack, ctx) == "in_review"


def test_a_pending_approval_done_turn_is_presented_once_after_a_restart(stack):
    answer = "Done on my side; the hire approval still waits for you."
    ctx = chat_killed_after_the_status_commit(stack, held_turn(answer, "done"), ("approval",))
    assert_presented_once_after_restart(stack, ctx, answer, "governed_response_waiting")


def test_a_turn_its_own_card_presents_records_none_after_a_restart(stack):
    ctx = chat_killed_after_the_status_commit(
        stack, held_turn("Which team should the designer join?", card=True)
    )
    run = presented_run(stack, ctx)
    assert run["status_reason"] == "governed_response_waiting"
    assert run["presentation"]["presentationDecision"] == "none"
    assert run["presentation"]["reason"] == "committed_conversation_interaction_presented"
    assert replies(stack, ctx) == []
    cards = interactions(stack, ctx)
    assert [(c["kind"], c["status"], c["run_id"]) for c in cards] == [
        ("question", "pending", run["id"])
    ]
    assert conversation(stack, ctx)["state"] == "waiting"
    assert candidates(stack, run["id"]) == []
    stack.servers[0].kill()
    stack.start_server()
    presentation_pass_after(stack, 0, past_the_grace(stack, run))
    assert replies(stack, ctx) == []
    assert stack.runs(ctx)[0]["presentation"] == run["presentation"]
