"""Presentation recovery pages past the candidates it cannot present: none holds the rest.

Held chat turns no installed policy accepts stay candidates (kept, not lost);
older than a committed answer and more than a page of them, they must not keep
that answer from being presented. Rows are written straight to a real
PostgreSQL as the status decision stores them (as in
``test_chat_recovery_candidates``), and the real engine's recovery passes run.
Each test closes its conversations at the end, so the next one starts with no
waiting candidate in the module's database.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.engine.recovery import presentation_recovery
from paperclip.engine.recovery.presentation_recovery import BATCH
from paperclip.models import (
    Comment,
    Conversation,
    ConversationTurnRecord,
    Run,
    WakeRequest,
)
from tests.engine.memory_world import PROVIDER, World, make_world

HELD = 150
"""More than a page of held chat turns, and not a whole number of pages."""

ANSWER = "The build is green again: the flaky test now waits for its server."


@pytest.fixture
async def world(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    built, _ = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    return built  # its engine is not started: the test runs recovery's passes itself


@pytest.fixture
async def held(world: World) -> AsyncIterator[list[uuid.UUID]]:
    """``HELD`` committed chat turns, each its conversation's unsettled current turn, all
    finished at the same instant ten minutes ago (pages split them by id)."""
    issue = await new_issue(world, "Approve the designer hire", status="in_review")
    finished_at = datetime.now(UTC) - timedelta(minutes=10)
    runs = []
    async with world.container.sessions().begin() as session:
        for person in range(HELD):
            wake = WakeRequest(
                company_id=world.company_id,
                agent_id=world.agent_id,
                issue_id=issue,
                source="comment",
                status="claimed",
            )
            session.add(wake)
            await session.flush()
            conversation = Conversation(
                company_id=world.company_id,
                issue_id=issue,
                agent_id=world.agent_id,
                user_ref=f"user:person-{person}",
                state="active",
                session_generation=1,
                current_wake_id=wake.id,
            )
            session.add(conversation)
            await session.flush()
            session.add(
                ConversationTurnRecord(
                    wake_request_id=wake.id,
                    conversation_id=conversation.id,
                    company_id=world.company_id,
                    agent_id=world.agent_id,
                    user_ref=conversation.user_ref,
                    session_generation=1,
                )
            )
            run = Run(
                company_id=world.company_id,
                agent_id=world.agent_id,
                issue_id=issue,
                provider=PROVIDER,
                status="succeeded",
                phase="finished",
                wake_request_id=wake.id,
                result={"outcome": "yielded", "summary": "waits for the approval"},
                status_reason="governed_response_waiting",
                answer="The hire approval waits for your decision.",
                finished_at=finished_at,
            )
            session.add(run)
            await session.flush()
            runs.append(run.id)
    yield runs
    async with world.container.sessions().begin() as session:
        await session.execute(
            update(Conversation).where(Conversation.issue_id == issue).values(state="closed")
        )


async def new_issue(world: World, title: str, *, status: str) -> uuid.UUID:
    issue = await world.container.issues().create(
        LOCAL_OPERATOR,
        world.company_id,
        title=title,
        description="",
        status=status,
        priority="medium",
        assignee_agent_id=None,
        parent_id=None,
    )
    return issue.id


async def committed_answer(world: World) -> uuid.UUID:
    """A task run whose status decision committed five minutes ago, after every held turn,
    and whose answer was never presented."""
    issue = await new_issue(world, "Fix the flaky build", status="done")
    async with world.container.sessions().begin() as session:
        run = Run(
            company_id=world.company_id,
            agent_id=world.agent_id,
            issue_id=issue,
            provider=PROVIDER,
            status="succeeded",
            phase="finished",
            result={"outcome": "done", "summary": "fixed"},
            status_reason="task_completed",
            answer=ANSWER,
            finished_at=datetime.now(UTC) - timedelta(minutes=5),
        )
        session.add(run)
        await session.flush()
        return run.id


async def answer_comments(world: World, run_id: uuid.UUID) -> int:
    run = await world.run(run_id)
    async with world.container.sessions()() as session:
        rows = await session.scalars(
            select(Comment.id).where(Comment.issue_id == run.issue_id, Comment.body == ANSWER)
        )
        return len(list(rows))


async def unpresented(world: World, run_ids: list[uuid.UUID]) -> int:
    async with world.container.sessions()() as session:
        rows = await session.scalars(
            select(Run.id).where(Run.id.in_(run_ids), Run.presentation.is_(None))
        )
        return len(list(rows))


async def test_held_chat_turns_do_not_keep_a_later_answer_from_being_presented(
    world: World, held: list[uuid.UUID]
):
    answer = await committed_answer(world)
    # The held turns fill the first page and more: the answer is not on it.
    assert answer not in await world.engine.presentations.candidates()
    recovery = world.engine.presentations
    assert await recovery.pass_once() == 1
    assert (await world.run(answer)).presentation["presentationDecision"] == "answer"
    assert await answer_comments(world, answer) == 1
    # Every held turn was passed over, each once, and is kept for a policy to present.
    assert recovery.waiting_without_policy == HELD
    assert await unpresented(world, held) == HELD
    # The next pass starts from the oldest again, presents nothing twice, counts the same.
    assert await recovery.pass_once() == 0
    assert await answer_comments(world, answer) == 1
    assert recovery.waiting_without_policy == HELD


async def test_a_pass_at_its_page_bound_leaves_the_rest_to_the_next_pass(
    world: World, held: list[uuid.UUID], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(presentation_recovery, "PAGES_PER_PASS", 1)
    answer = await committed_answer(world)
    recovery = world.engine.presentations
    first_started = datetime.now(UTC)
    # One page: the oldest held turns, and the sweep is not over.
    assert await recovery.pass_once() == 0
    assert recovery.last_pass_started_at is None
    assert recovery.waiting_without_policy == BATCH
    # The next pass goes on where it stopped, reaches the answer and the end.
    second_started = datetime.now(UTC)
    assert await recovery.pass_once() == 1
    assert await answer_comments(world, answer) == 1
    assert recovery.waiting_without_policy == HELD
    # The sweep began with the first pass: that is when everything it covers was due.
    assert recovery.last_pass_started_at is not None
    assert first_started <= recovery.last_pass_started_at < second_started
    # At the end, the next sweep starts again from the oldest.
    for _ in range(2):
        assert await recovery.pass_once() == 0
    assert recovery.last_pass_started_at > second_started
    assert recovery.waiting_without_policy == HELD
    assert await answer_comments(world, answer) == 1
