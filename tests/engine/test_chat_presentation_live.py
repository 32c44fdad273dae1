"""A chat turn's answer on the live path, and the live path racing recovery on two replicas.

Real processes (control planes, a runner, the fake Codex app-server) on one
PostgreSQL. The exactly-once rule is the database's: the presentation
decision is written under the run's row lock where none is, and a run has at
most one reply (``uq_conversation_messages_reply``).
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from tests.engine.chat_stack import (
    candidates,
    conversation,
    held_turn,
    interactions,
    issue_status,
    link_interaction,
    messages,
    open_chat,
    past_the_grace,
    presentation_pass_after,
    presented_run,
    replies,
    say,
)
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

POINT = "engine.status_decision.before_presentation"


def healthy(stack, index: int) -> bool:
    try:
        with stack.api(index) as api:
            return api.get("/health", timeout=1).status_code == 200
    except httpx.HTTPError:  # frozen: no answer in time
        return False


def test_a_live_presented_answer_is_no_candidate_and_never_posted_twice(stack):
    stack.start_server()
    stack.start_runner()
    answer = "I fixed the build: the lint job passes again."
    ctx = stack.setup_issue(held_turn(answer, "done"))
    open_chat(stack, ctx)
    say(stack, ctx, "Can you fix the build?")
    run = presented_run(stack, ctx)
    assert (run["status_reason"], run["presentation"]["reason"]) == (
        "conversation_turn_finished",
        "conversation_turn_finished",
    )
    assert candidates(stack, run["id"]) == []
    # A recovery pass after the live path's grace finds nothing to do.
    presentation_pass_after(stack, 0, past_the_grace(stack, run))
    assert replies(stack, ctx) == [answer]
    assert [m["role"] for m in messages(stack, ctx)] == ["user", "agent"]
    assert [m["delivery"] for m in messages(stack, ctx)] == ["turn", ""]
    assert messages(stack, ctx)[1]["run_id"] == run["id"]
    assert conversation(stack, ctx)["state"] == "idle"
    assert issue_status(stack, ctx) == "in_progress"  # a chat goes on: the task stays open


def test_own_question_card_live_no_reply_none_recorded_card_pending_conversation_waiting(stack):
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(held_turn("Which team should the designer join?", card=True))
    open_chat(stack, ctx)
    say(stack, ctx, "Please hire a designer.")
    run = presented_run(stack, ctx)
    assert run["presentation"]["presentationDecision"] == "none"
    assert run["presentation"]["reason"] == "committed_conversation_interaction_presented"
    [card] = interactions(stack, ctx)
    assert (card["kind"], card["status"], card["run_id"]) == ("question", "pending", run["id"])
    assert conversation(stack, ctx)["state"] == "waiting"
    assert issue_status(stack, ctx) == "in_review"
    presentation_pass_after(stack, 0, past_the_grace(stack, run))
    assert replies(stack, ctx) == []


def test_answering_the_card_wakes_the_agent_for_the_next_turn(stack):
    stack.start_server()
    stack.start_runner()
    ctx = stack.setup_issue(held_turn("Which team should the designer join?", card=True))
    open_chat(stack, ctx)
    say(stack, ctx, "Please hire a designer.")
    presented_run(stack, ctx)
    [card] = interactions(stack, ctx)
    stack.rewrite_script(ctx, held_turn("The designer joins the web team.", "done"))
    with stack.api() as api:
        r = api.post(
            f"/companies/{ctx['company']['id']}/interactions/{card['id']}/actions",
            json={"action": "answer", "answer": "The web team."},
        )
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "answered"
        again = api.post(
            f"/companies/{ctx['company']['id']}/interactions/{card['id']}/actions",
            json={"action": "answer", "answer": "Twice."},
        )
        assert again.status_code == 409 and again.json()["code"] == "interaction_not_pending"
    wait_until(lambda: replies(stack, ctx) == ["The designer joins the web team."], 90)
    assert conversation(stack, ctx)["state"] == "idle"


def test_the_live_path_and_recovery_racing_on_two_replicas_post_exactly_one_reply(stack):
    """Both replicas are armed to freeze right after a turn's status decision commits, for
    longer than the live path's grace. The replica that controls the turn freezes there;
    the other one's recovery presents the answer; the frozen one then wakes up and its live
    path finds the decision recorded: one reply."""
    freeze = 6 * stack.lease_seconds + 8
    stack.extra_env["PAPERCLIP_FAILPOINTS"] = f"{POINT}=delay:{freeze}"
    stack.start_server(0)
    stack.start_server(1)
    stack.start_runner()
    answer = "Both replicas saw this turn; you see its answer once."
    ctx = stack.setup_issue(held_turn(answer), title="Hire a designer")
    link_interaction(stack, ctx, "approval")
    open_chat(stack, ctx)
    say(stack, ctx, "Where is the hire?")
    [frozen] = wait_until(
        lambda: [i for i, s in enumerate(stack.servers) if f"{POINT} delayed" in s.tail(400)],
        120,
        message="the controlling replica frozen after the status commit",
    )
    other = 1 - frozen
    run = presented_run(stack, ctx, timeout=60)
    wait_until(
        lambda: f"presented the answer of run {run['id']}" in stack.servers[other].tail(400),
        30,
        message=f"replica {other}'s recovery presenting (log: {stack.servers[other].tail(20)})",
    )
    # The frozen replica wakes up and runs its live path: it must post nothing. It answers
    # again once awake; two of its recovery passes later, its live path is long done.
    wait_until(lambda: healthy(stack, frozen), freeze + 60, message="the frozen replica awake")
    awake = datetime.now(UTC)
    presentation_pass_after(stack, frozen, awake)
    presentation_pass_after(stack, frozen, datetime.now(UTC))
    assert stack.servers[frozen].proc.poll() is None
    assert f"presented the answer of run {run['id']}" not in stack.servers[frozen].tail(400)
    assert replies(stack, ctx) == [answer]
    assert replies(stack, ctx, index=frozen) == [answer]
    assert candidates(stack, run["id"]) == []
    assert stack.runs(ctx)[0]["presentation"] == run["presentation"]
