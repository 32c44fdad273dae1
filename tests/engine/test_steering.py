"""The steer request on a real database and the real engine: checks, and exactly once.

The runner is the in-memory peer: what the engine sends it is what a runner
process would receive.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from paperclip_hookspecs.providers import ProviderCapabilities
from sqlalchemy import select

from paperclip.common.actor import LOCAL_OPERATOR, Actor
from paperclip.engine.turns.steering import RunSteering
from paperclip.errors import ConflictError, PaperclipError
from paperclip.models import ActivityEntry, RunSteer, WakeCommentSnapshot, WakeSnapshotComment
from paperclip.wire import messages as wire
from tests.engine.memory_world import EchoProvider, call, make_world
from tests.engine.steer_world import live_turn, running_turn_of


async def count_rows(world, model, **where) -> int:
    from sqlalchemy import func

    async with world.container.sessions()() as session:
        stmt = select(func.count()).select_from(model).filter_by(**where)
        return (await session.execute(stmt)).scalar_one()


async def test_a_steer_reaches_the_runner_once_even_when_requested_concurrently(steer_world):
    live = await live_turn(steer_world)
    comment_id = await live.comment("Also update the changelog.")

    sent = await asyncio.gather(
        *(
            live.steering.steer_with_comment(
                LOCAL_OPERATOR, steer_world.company_id, live.start.run_id, comment_id
            )
            for _ in range(5)
        )
    )
    assert sorted(s.duplicate for s in sent) == [False, True, True, True, True]
    assert {(s.message_id, s.turn, s.delivery) for s in sent} == {(str(comment_id), 1, "steer")}

    steer = await live.peer.expect(wire.Steer, run_id=live.start.run_id)
    assert (steer.message_id, steer.text, steer.turn) == (
        str(comment_id),
        "Also update the changelog.",
        1,
    )
    with pytest.raises(TimeoutError):
        await live.peer.expect(wire.Steer, within=1.5)  # never a second one
    assert await count_rows(steer_world, RunSteer, run_id=live.start.run_id) == 1
    steered = await count_rows(
        steer_world, ActivityEntry, action="run.steered", entity_id=str(live.start.run_id)
    )
    assert steered == 1


async def test_a_provider_without_a_true_steer_answers_steer_not_supported(world):
    live = await live_turn(world)  # the echo provider of ``world`` cannot steer
    comment_id = await live.comment("Please hurry.")
    with pytest.raises(ConflictError) as refused:
        await live.steering.steer_with_comment(
            LOCAL_OPERATOR, world.company_id, live.start.run_id, comment_id
        )
    assert refused.value.code == "steer_not_supported"
    assert refused.value.details == {"provider": "echo", "follow_up": "wake"}
    assert await count_rows(world, RunSteer, run_id=live.start.run_id) == 0


async def test_a_steer_is_refused_for_foreign_comments_agents_and_ended_turns(
    steer_world, paperclip_container
):
    live = await live_turn(steer_world)
    run_id = live.start.run_id
    other_issue = await steer_world.assign("Another task")
    elsewhere = await live.comment("Not this task.", issue_id=other_issue)
    other = await paperclip_container.companies().create(
        LOCAL_OPERATOR, name="Other", issue_prefix=None
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
        LOCAL_OPERATOR, other.id, foreign_issue.id, body="Foreign words."
    )
    mine = await live.comment("Mine.")

    async def code_of(actor: Actor, comment_id) -> tuple[int, str]:
        with pytest.raises(PaperclipError) as refused:
            await live.steering.steer_with_comment(
                actor, steer_world.company_id, run_id, comment_id
            )
        return refused.value.status_code, refused.value.code

    assert await code_of(LOCAL_OPERATOR, elsewhere) == (422, "steer_comment_not_on_run_issue")
    assert await code_of(LOCAL_OPERATOR, foreign.id) == (422, "comment_not_found")
    agent = Actor(type="agent", id=str(steer_world.agent_id), company_id=steer_world.company_id)
    assert await code_of(agent, mine) == (403, "steer_by_agent_forbidden")

    live.peer.send(
        wire.TurnFinished(seq=0, run_id=run_id, turn=1, status="failed", error="model error")
    )
    await steer_world.until_ended(run_id)
    assert await code_of(LOCAL_OPERATOR, mine) == (409, "run_not_steerable")
    assert await count_rows(steer_world, RunSteer, run_id=run_id) == 0


async def test_a_provider_with_a_follow_up_only_gets_the_message_as_a_follow_up(
    paperclip_container, paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(
        EchoProvider(ProviderCapabilities(follow_up=True)), name="echo-provider"
    )
    world, engine = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    await engine.start()
    try:
        live = await live_turn(world)
        comment_id = await live.comment("After this step, also run the linter.")
        sent = await live.steering.steer_with_comment(
            LOCAL_OPERATOR, world.company_id, live.start.run_id, comment_id
        )
        assert (sent.delivery, sent.duplicate) == ("follow_up", False)
        steer = await live.peer.expect(wire.Steer, run_id=live.start.run_id)
        assert steer.text == "After this step, also run the linter."
        again = await live.steering.steer_with_comment(
            LOCAL_OPERATOR, world.company_id, live.start.run_id, comment_id
        )
        assert (again.delivery, again.duplicate) == ("follow_up", True)
    finally:
        await engine.stop()


async def test_an_answered_card_steers_the_live_turn_of_the_run_that_asked_once(steer_world):
    live = await live_turn(steer_world)
    company = steer_world.company_id
    asked = await call(
        live.peer, live.start, "request_human_input", kind="question", title="Which team?"
    )
    card_id = uuid.UUID(asked.content["interaction_id"])

    # Not answered yet: nothing to steer.
    with pytest.raises(PaperclipError) as refused:
        await live.steering.steer_with_interaction(LOCAL_OPERATOR, company, card_id)
    assert refused.value.code == "steer_interaction_unusable"

    await steer_world.container.interactions().act(
        LOCAL_OPERATOR,
        company,
        card_id,
        "answer",
        response={"answer": "The web team.", "note": "From Monday."},
    )
    sent = await asyncio.gather(
        *(live.steering.steer_with_interaction(LOCAL_OPERATOR, company, card_id) for _ in range(3))
    )
    assert sorted(s.duplicate for s in sent) == [False, True, True]
    steer = await live.peer.expect(wire.Steer, run_id=live.start.run_id)
    assert (steer.message_id, steer.turn) == (str(card_id), 1)
    assert (
        steer.text
        == 'A person answered your question "Which team?":\nThe web team.\nNote: From Monday.'
    )
    with pytest.raises(TimeoutError):
        await live.peer.expect(wire.Steer, within=1.5)  # never a second one
    assert await count_rows(steer_world, RunSteer, run_id=live.start.run_id) == 1


async def test_a_comment_the_run_was_woken_with_is_not_steered_into_it_again(steer_world):
    """Chaos seed 2033: a person's comment woke the run (it is in the run's input) and was
    then steered into the same run: the model read it twice. Refused now, nothing sent."""
    world = steer_world
    peer, _ = await world.connect(await world.new_runner())
    issue = await world.container.issues().create(
        LOCAL_OPERATOR,
        world.company_id,
        title="Parser",
        description="",
        status="todo",
        priority="medium",
        assignee_agent_id=None,
        parent_id=None,
    )
    woken_with = await world.container.comments().create(
        LOCAL_OPERATOR, world.company_id, issue.id, body="Start with the parser."
    )
    await world.container.issues().update(
        LOCAL_OPERATOR, world.company_id, issue.id, {"assignee_agent_id": world.agent_id}
    )
    start = await running_turn_of(world, peer, issue.id)
    async with world.container.sessions()() as session:
        in_wake = await session.scalars(
            select(WakeSnapshotComment.comment_id)
            .join(WakeCommentSnapshot, WakeCommentSnapshot.id == WakeSnapshotComment.snapshot_id)
            .where(WakeCommentSnapshot.run_id == start.run_id)
        )
        assert woken_with.id in set(in_wake)  # the run has the comment in its input
    steering = RunSteering(
        world.container.sessions(), world.engine.calls.plugins, world.engine.connections.links
    )

    with pytest.raises(ConflictError) as refused:
        await steering.steer_with_comment(
            LOCAL_OPERATOR, world.company_id, start.run_id, woken_with.id
        )
    assert refused.value.code == "steer_comment_in_wake"
    assert await count_rows(world, RunSteer, run_id=start.run_id) == 0
    with pytest.raises(TimeoutError):
        await peer.expect(wire.Steer, run_id=start.run_id, within=1.0)

    later = await world.container.comments().create(
        LOCAL_OPERATOR, world.company_id, issue.id, body="And the lexer."
    )
    sent = await steering.steer_with_comment(
        LOCAL_OPERATOR, world.company_id, start.run_id, later.id
    )
    assert not sent.duplicate
    steer = await peer.expect(wire.Steer, run_id=start.run_id)
    assert steer.text == "And the lexer."
