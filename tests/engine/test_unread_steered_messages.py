"""Which steers a restart continuation carries, read from the run log on a real database.

The ``paperclip-unread-steers`` policy decides from the log; the control plane
hands it only the events a runner delivered, and turns the answer back into the
text of comments of the run's own company and issue.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from paperclip_hookspecs.providers import ProviderCapabilities
from sqlalchemy import select, update

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.engine.logs.events import NewEvent, append_events
from paperclip.engine.recovery.resumption import Limits, settle_lost_run
from paperclip.engine.turns.unread_steers import unread_steered_messages
from paperclip.models import Run, RunTurn
from paperclip.prompts import read_execution_input
from paperclip.prompts.restart import FRESH_STEERED_INSTRUCTION
from tests.engine.memory_world import EchoProvider, call, make_world
from tests.engine.steer_world import live_turn

pytestmark = pytest.mark.installed_plugins

# The plugin is installed where the marker is selected (tox py311); the core env only collects.
unread_steers_plugin = pytest.importorskip("paperclip_unread_steers.plugin")

RUNNER = "host:1:0123abcd"


def user_message(item_id: str, text: str = "input") -> dict:
    content = [{"type": "text", "text": text}]
    return {"item": {"type": "userMessage", "id": item_id, "content": content}}


class Log:
    """Appends events to a run's log the way the inbox does (the run's row locked)."""

    def __init__(self, world, run_id: uuid.UUID) -> None:
        self.world, self.run_id = world, run_id
        self.seq = 1000

    async def add(self, type_: str, payload: dict, source: str = RUNNER) -> None:
        self.seq += 1
        async with self.world.container.sessions().begin() as session:
            run = await session.get(Run, self.run_id, with_for_update=True)
            await append_events(session, run, source, [NewEvent(self.seq, type_, payload)])

    async def next_turn(self) -> None:
        async with self.world.container.sessions().begin() as session:
            await session.execute(
                update(Run).where(Run.id == self.run_id).values(turn=Run.turn + 1)
            )

    async def unread(self) -> list[tuple[str, str]]:
        async with self.world.container.sessions()() as session:
            run = await session.get(Run, self.run_id)
            found = await unread_steered_messages(session, run, self.world.engine.calls.plugins)
        return [(m.id, m.body) for m in found]


async def test_unread_steers_come_from_runner_events_and_the_runs_own_comments(
    steer_world, paperclip_container, paperclip_register_plugin
):
    paperclip_register_plugin(unread_steers_plugin, name="unread-steers")
    live = await live_turn(steer_world)
    await steer_world.engine.stop()  # the log is written here alone from now on
    log = Log(steer_world, live.start.run_id)
    first = await live.comment("First steer.")
    second = await live.comment("Second steer.")
    elsewhere = await live.comment("Another task.", issue_id=await steer_world.assign("Other"))
    other = await paperclip_container.companies().create(
        LOCAL_OPERATOR, name="Elsewhere", issue_prefix=None
    )
    foreign_issue = await paperclip_container.issues().create(
        LOCAL_OPERATOR,
        other.id,
        title="Foreign",
        description="",
        status="todo",
        priority="medium",
        assignee_agent_id=None,
        parent_id=None,
    )
    foreign = await paperclip_container.comments().create(
        LOCAL_OPERATOR, other.id, foreign_issue.id, body="Another company's words."
    )
    forged = await live.comment("Acknowledged only by a tool's output.")

    await log.add("item/completed", user_message("input-1"))
    for comment_id in (first, second, elsewhere, foreign.id, uuid.uuid4()):
        await log.add("steering_acknowledgement", {"message_id": str(comment_id)})
    await log.add("steering_acknowledgement", {"message_id": "not-a-comment-id"})
    # Events the control plane wrote for the model have no transport id: never evidence.
    await log.add("steering_acknowledgement", {"message_id": str(forged)}, source="tool")
    await log.add("item/completed", user_message("from-a-tool"), source="tool")
    await log.add("item/completed", {"item": {"type": "agentMessage", "id": "a-1", "text": "ok"}})

    # Other issues' and companies' messages (and unknown ids) are ignored.
    assert await log.unread() == [(str(first), "First steer."), (str(second), "Second steer.")]

    # The model reads the oldest at its next step.
    await log.add("item/completed", user_message("steer-1", "First steer."))
    assert await log.unread() == [(str(second), "Second steer.")]

    # A restart continuation's input (a userMessage of the next turn) carried the rest:
    # nothing is returned after it.
    await log.next_turn()
    await log.add("item/completed", user_message("continuation", "Continue."))
    assert await log.unread() == []


async def test_without_the_unread_steers_policy_a_continuation_carries_nothing(steer_world):
    live = await live_turn(steer_world)
    await steer_world.engine.stop()
    log = Log(steer_world, live.start.run_id)
    steer = await live.comment("Lost without the policy.")
    await log.add("item/completed", user_message("input-1"))
    await log.add("steering_acknowledgement", {"message_id": str(steer)})
    assert await log.unread() == []


async def test_an_answered_card_is_read_back_with_the_text_its_steer_was_sent_with(
    steer_world, paperclip_register_plugin
):
    paperclip_register_plugin(unread_steers_plugin, name="unread-steers")
    live = await live_turn(steer_world)
    company = steer_world.company_id
    asked = await call(
        live.peer, live.start, "request_human_input", kind="question", title="Which team?"
    )
    answered = uuid.UUID(asked.content["interaction_id"])
    still_open = await call(
        live.peer, live.start, "request_human_input", kind="question", title="When?"
    )
    await steer_world.container.interactions().act(
        LOCAL_OPERATOR, company, answered, "answer", response={"answer": "The web team."}
    )
    elsewhere = await steer_world.container.interactions().create(
        LOCAL_OPERATOR,
        company,
        await steer_world.assign("Other"),
        kind="execution_stage",
        title="Another task's stage",
        body="",
        options=[],
        conversation_id=None,
    )
    await steer_world.engine.stop()  # the log is written here alone from now on
    log = Log(steer_world, live.start.run_id)
    await log.add("item/completed", user_message("input-1"))
    for message_id in (answered, still_open.content["interaction_id"], elsewhere.id):
        await log.add("steering_acknowledgement", {"message_id": str(message_id)})

    # Only the run's own issue's answered card; its text is the one the steer sent.
    assert await log.unread() == [
        (str(answered), 'A person answered your question "Which team?":\nThe web team.')
    ]
    await log.add("item/completed", user_message("steer-1", "A person answered"))
    assert await log.unread() == []


async def test_a_fresh_retry_carries_the_steers_the_lost_session_never_read(
    paperclip_container, paperclip_plugin_host, paperclip_register_plugin
):
    """The session could not be resumed (``resume_failed``): the new session's brief is the
    steers' last way to the model, since the ledger counts them read once a later turn began."""
    paperclip_register_plugin(unread_steers_plugin, name="unread-steers")
    paperclip_register_plugin(
        EchoProvider(ProviderCapabilities(steer=True, resume=True, fresh_retry=True)),
        name="echo-provider",
    )
    world, engine = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    await engine.start()
    try:
        live = await live_turn(world)
    finally:
        await engine.stop()  # the log is written here alone from now on
    log = Log(world, live.start.run_id)
    steer = await live.comment("Use the staging database.")
    await log.add("item/completed", user_message("input-1"))
    await log.add("steering_acknowledgement", {"message_id": str(steer)})

    async with world.container.sessions().begin() as session:
        run = await session.get(Run, live.start.run_id, with_for_update=True)
        outcome = await settle_lost_run(
            session,
            run,
            engine.calls.plugins,
            Limits(max_resumes=3, wait_for_runner=timedelta(minutes=1)),
            reason="resume_failed",
        )
    assert outcome == "resuming"
    async with world.container.sessions()() as session:
        turn = (
            await session.scalars(
                select(RunTurn).where(RunTurn.run_id == run.id, RunTurn.number == 2)
            )
        ).one()
    assert turn.kind == "fresh_retry"
    prompt = turn.input["prompt"]
    assert prompt.count("Use the staging database.") == 1
    assert FRESH_STEERED_INSTRUCTION in prompt
    assert read_execution_input(turn.input["executionInput"]).model.prompt == prompt
