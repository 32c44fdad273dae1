"""A chat message sent while the conversation's turn runs steers it, in one transaction.

The message, its comment on the task and the steer (its ``run_steers`` row, the
runner's outbox) commit together or not at all: a message the turn cannot take
is refused with nothing written, never stored and then answered with a 409.
The real engine and the memory runner; the post is composed as the API composes it.
"""

from __future__ import annotations

import functools
import uuid

import pytest
from sqlalchemy import func, select, update

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.domain.chat.conversations import Posted
from paperclip.engine.turns.steering import RunSteering
from paperclip.errors import ConflictError
from paperclip.models import Comment, ConversationMessage, RunSteer, RunTurn, TurnStatus
from paperclip.wire import messages as wire
from tests.engine.memory_world import World
from tests.engine.steer_world import running_turn_of


class Chat:
    """A conversation of ``world``'s agent about a new task, and its post as the API makes it."""

    def __init__(self, world: World, conversation_id: uuid.UUID, issue_id: uuid.UUID) -> None:
        self.world = world
        self.id = conversation_id
        self.issue_id = issue_id
        self.steering = RunSteering(
            world.container.sessions(), world.engine.calls.plugins, world.engine.connections.links
        )

    async def say(self, body: str) -> Posted:
        posted: Posted = await self.world.container.conversations().post(
            LOCAL_OPERATOR,
            self.world.company_id,
            self.id,
            body=body,
            steer=functools.partial(self.steering.steer_in, LOCAL_OPERATOR),
        )
        if posted.steered is not None:
            self.steering.kick(posted.steered)
        return posted

    async def count(self, model, **where) -> int:
        async with self.world.container.sessions()() as session:
            return await session.scalar(select(func.count()).select_from(model).filter_by(**where))


async def open_chat(world: World) -> Chat:
    issue = await world.container.issues().create(
        LOCAL_OPERATOR,
        world.company_id,
        title="Fix the build",
        description="The build is red.",
        status="todo",
        priority="medium",
        assignee_agent_id=None,
        parent_id=None,
    )
    conversation = await world.container.conversations().create(
        LOCAL_OPERATOR, world.company_id, issue_id=issue.id, agent_id=world.agent_id, title=""
    )
    return Chat(world, conversation.id, issue.id)


async def live_chat_turn(world: World) -> tuple[Chat, wire.StartTurn, object]:
    """A chat whose first message's turn the memory runner started and runs."""
    peer, _ = await world.connect(await world.new_runner())
    chat = await open_chat(world)
    first = await chat.say("Can you fix the build?")
    assert (first.message.delivery, first.steered) == ("turn", None)
    start = await running_turn_of(world, peer, chat.issue_id)
    return chat, start, peer


async def test_a_message_sent_while_the_turn_runs_steers_it_once(steer_world):
    chat, start, peer = await live_chat_turn(steer_world)

    posted = await chat.say("Also update the changelog.")

    assert posted.message.delivery == "steer"
    assert posted.steered is not None and posted.steered.id == start.run_id
    steer = await peer.expect(wire.Steer, run_id=start.run_id)
    assert (steer.text, steer.turn) == ("Also update the changelog.", 1)
    comment = await chat.count(Comment, issue_id=chat.issue_id, body="Also update the changelog.")
    assert comment == 1
    assert await chat.count(RunSteer, run_id=start.run_id) == 1
    assert await chat.count(ConversationMessage, conversation_id=chat.id, role="user") == 2


async def test_a_message_the_live_turn_cannot_take_is_refused_with_nothing_written(steer_world):
    chat, start, _ = await live_chat_turn(steer_world)
    # As between a lost turn and its continuation: the run runs, no turn of it does yet.
    async with steer_world.container.sessions().begin() as session:
        await session.execute(
            update(RunTurn).where(RunTurn.run_id == start.run_id).values(status=TurnStatus.STARTING)
        )

    with pytest.raises(ConflictError) as refused:
        await chat.say("Also update the changelog.")

    assert refused.value.code == "run_not_steerable"
    # Before, the message and its comment were committed first and the steer refused after.
    assert await chat.count(ConversationMessage, conversation_id=chat.id, role="user") == 1
    assert await chat.count(Comment, issue_id=chat.issue_id, body="Also update the changelog.") == 0
    assert await chat.count(RunSteer, run_id=start.run_id) == 0
