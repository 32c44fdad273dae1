"""Presentation recovery's candidate query lists exactly the chat turns its policy accepts.

Each case is a committed chat turn as the status decision stores it (a
succeeded run with its answer, status reason and result, no presentation
decision), written straight to a real PostgreSQL, then one recovery pass of
the real engine. A decision recorded earlier is kept.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.domain.chat import chat_turns
from paperclip.models import (
    Conversation,
    ConversationMessage,
    ConversationTurnRecord,
    Run,
    WakeRequest,
)
from tests.engine.memory_world import PROVIDER, make_world

pytestmark = pytest.mark.installed_plugins

# The policy is installed where the marker is selected (tox py311); the core env only collects.
unpresented_answers = pytest.importorskip("paperclip_unpresented_answers.plugin")

ANSWER = "The hire approval waits for your decision."


@dataclass
class Case:
    reason: str = "governed_response_waiting"
    outcome: str = "yielded"
    issue_status: str = "in_review"
    state: str = "active"
    current: bool = True
    generation_moved: bool = False
    other_user: bool = False
    other_run: bool = False
    presentation: dict | None = None
    answer: str | None = ANSWER


CASES = {
    "held_yielded": (Case(), True),
    "held_done": (Case(outcome="done"), True),
    "finished_in_progress": (
        Case(reason="conversation_turn_finished", outcome="done", issue_status="in_progress"),
        True,
    ),
    "finished_in_review": (Case(reason="conversation_turn_finished", outcome="done"), False),
    "superseded": (Case(current=False), False),
    "settled_waiting": (Case(state="waiting"), False),
    "settled_idle": (Case(state="idle"), False),
    "session_generation_moved": (Case(generation_moved=True), False),
    "another_person": (Case(other_user=True), False),
    "another_run_executing": (Case(other_run=True), False),
    "needs_review": (Case(outcome="needs_review"), False),
    "earlier_decision_kept": (
        Case(presentation={"presentationDecision": "none", "reason": "yielded_control_plane_wait"}),
        False,
    ),
}


@pytest.fixture
async def world(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    built, _ = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    return built  # its engine is not started: the test runs recovery's passes itself


async def committed_turn(world, case: Case) -> uuid.UUID:
    """A chat turn whose status decision committed and whose presentation was never decided."""
    issue = await world.container.issues().create(
        LOCAL_OPERATOR,
        world.company_id,
        title="Hire a designer",
        description="",
        status=case.issue_status,
        priority="medium",
        assignee_agent_id=None,
        parent_id=None,
    )
    async with world.container.sessions().begin() as session:
        wake = WakeRequest(
            company_id=world.company_id,
            agent_id=world.agent_id,
            issue_id=issue.id,
            source="comment",
            status="claimed",
        )
        session.add(wake)
        await session.flush()
        conversation = Conversation(
            company_id=world.company_id,
            issue_id=issue.id,
            agent_id=world.agent_id,
            user_ref="user:ada",
            state=case.state,
            session_generation=2 if case.generation_moved else 1,
            current_wake_id=wake.id if case.current else None,
        )
        session.add(conversation)
        await session.flush()
        session.add(
            ConversationTurnRecord(
                wake_request_id=wake.id,
                conversation_id=conversation.id,
                company_id=world.company_id,
                agent_id=world.agent_id,
                user_ref="user:bob" if case.other_user else "user:ada",
                session_generation=1,
            )
        )
        run = Run(
            company_id=world.company_id,
            agent_id=world.agent_id,
            issue_id=issue.id,
            provider=PROVIDER,
            status="succeeded",
            phase="finished",
            wake_request_id=wake.id,
            result={"outcome": case.outcome, "summary": "ok"},
            status_reason=case.reason,
            answer=case.answer,
            finished_at=datetime.now(UTC) - timedelta(minutes=5),
        )
        if case.presentation is not None:  # else SQL NULL, as a run is stored (not JSON null)
            run.presentation = case.presentation
        session.add(run)
        if case.other_run:
            session.add(
                Run(
                    company_id=world.company_id,
                    agent_id=world.agent_id,
                    issue_id=issue.id,
                    provider=PROVIDER,
                    status="queued",
                )
            )
        await session.flush()
        return run.id


async def accepted(world, run_id: uuid.UUID) -> bool:
    async with world.container.sessions()() as session:
        run = await session.get(Run, run_id)
        turn = await chat_turns.chat_turn_of(session, run)
        facts = await chat_turns.unpresented_facts(session, run, turn)
    return run.presentation is None and world.engine.endings.plugins.accept_unpresented_turn(facts)


async def reply_count(world, run_id: uuid.UUID) -> int:
    async with world.container.sessions()() as session:
        rows = await session.scalars(
            select(ConversationMessage.id).where(ConversationMessage.run_id == run_id)
        )
        return len(list(rows))


async def test_paperclip_accept_unpresented_turn_the_candidates_are_the_accepted_turns(
    world, paperclip_register_plugin
):
    paperclip_register_plugin(unpresented_answers, name="unpresented-answers")
    runs = {name: await committed_turn(world, case) for name, (case, _) in CASES.items()}
    listed = set(await world.engine.presentations.candidates())
    for name, (_, expected) in CASES.items():
        assert (runs[name] in listed) is expected, name
        assert await accepted(world, runs[name]) is expected, name
    assert await world.engine.presentations.pass_once() == len(
        [n for n, (_, e) in CASES.items() if e]
    )
    for name, (case, expected) in CASES.items():
        assert await reply_count(world, runs[name]) == (1 if expected else 0), name
        stored = (await world.run(runs[name])).presentation
        if expected:
            assert stored["presentationDecision"] == "answer" and stored["reason"] == case.reason
        else:
            assert stored == case.presentation, name  # a recorded decision is kept
    # A second pass finds nothing and posts nothing.
    assert not set(await world.engine.presentations.candidates()) & set(runs.values())
    assert await world.engine.presentations.pass_once() == 0
    for name, (_, expected) in CASES.items():
        assert await reply_count(world, runs[name]) == (1 if expected else 0), name


async def test_paperclip_accept_unpresented_turn_without_the_policy_recovery_leaves_chat_turns(
    world, caplog, paperclip_register_plugin
):
    run_id = await committed_turn(world, Case())
    assert run_id in await world.engine.presentations.candidates()
    with caplog.at_level(logging.WARNING, logger="paperclip.engine.recovery.presentation_recovery"):
        assert await world.engine.presentations.pass_once() == 0
    assert (await world.run(run_id)).presentation is None
    assert await reply_count(world, run_id) == 0
    # Not silently: the operator is told what waits and what to install.
    assert "install paperclip-unpresented-answers" in caplog.text
    assert world.engine.presentations.waiting_without_policy >= 1
    # Kept, not lost: once the policy is installed, the next pass presents it, once.
    paperclip_register_plugin(unpresented_answers, name="unpresented-answers")
    assert await world.engine.presentations.pass_once() >= 1
    assert await reply_count(world, run_id) == 1
    assert world.engine.presentations.waiting_without_policy == 0


async def test_a_chat_turn_that_ended_without_prose_settles_after_a_restart(
    world, paperclip_register_plugin
):
    """Nothing to post, yet the turn is decided (``none``) and its conversation settles."""
    paperclip_register_plugin(unpresented_answers, name="unpresented-answers")
    finished = Case(reason="conversation_turn_finished", outcome="done", issue_status="in_progress")
    run_id = await committed_turn(world, replace(finished, answer=None))
    assert run_id in await world.engine.presentations.candidates()
    assert await world.engine.presentations.pass_once() >= 1  # other tests' runs may be due
    run = await world.run(run_id)
    assert run.presentation == {
        "presentationDecision": "none",
        "reason": "conversation_turn_without_prose",
        "comment_id": None,
        "message_id": None,
    }
    assert await reply_count(world, run_id) == 0
    async with world.container.sessions()() as session:
        state = await session.scalar(
            select(Conversation.state).where(Conversation.current_wake_id == run.wake_request_id)
        )
    assert state == "idle"
    assert run_id not in await world.engine.presentations.candidates()
