"""A fresh retry's prompt, as recovery builds it on a real database.

When a lost session cannot be resumed (``resume_failed``), the run goes on in a
new session with the full brief. That brief must be the one its first turn
had: the earlier thread (and what the lost attempt posted), the rules in the
provider's system carrier, and the envelope version the run started on.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from paperclip_hookspecs.prompts import Lane, SessionAttempt
from paperclip_hookspecs.providers import ProviderCapabilities
from sqlalchemy import select

from paperclip.common.actor import LOCAL_OPERATOR, Actor
from paperclip.engine.context.prompt import carriers_of
from paperclip.engine.recovery.resumption import Limits, settle_lost_run
from paperclip.models import Run, RunTurn
from paperclip.prompts import AssemblyRequest, assemble_execution_input, read_execution_input
from paperclip.prompts.envelopes import EXECUTION_INPUT_V4, EXECUTION_INPUT_V5
from paperclip.prompts.rules import DEFAULT_RULES
from tests.engine.memory_world import EchoProvider, call, make_world
from tests.engine.steer_world import running_turn_of

# A Codex-like provider: its rules travel in its system prompt.
CARRIED = ProviderCapabilities(resume=True, fresh_retry=True, mcp_tools=True, system_prompt=True)

BEFORE = "I looked at auth/session.py last week: the redirect is set there."
ASK = "Please also keep the query string."
POSTED = "Pushed the fix to branch fix-redirect; running the tests next."
LATER = "A note for later: the docs need a line about this."


async def lost_after_posting(world, engine, *, v4: bool) -> Run:
    """A run whose first turn posted a comment, then was lost; its new session is due."""
    issue_id = await world.assign("Fix the login redirect")
    agent = Actor(type="agent", id=str(world.agent_id), company_id=world.company_id)
    comments = world.container.comments()
    await comments.create(agent, world.company_id, issue_id, body=BEFORE)
    await comments.create(LOCAL_OPERATOR, world.company_id, issue_id, body=ASK)
    await engine.start()
    try:
        peer, _ = await world.connect(await world.new_runner())
        start = await running_turn_of(world, peer, issue_id)
        posted = await call(peer, start, "post_comment", body=POSTED)
        assert not posted.is_error, posted
        # Written by a person while the run works: a later wake's, not this run's history.
        await comments.create(LOCAL_OPERATOR, world.company_id, issue_id, body=LATER)
    finally:
        await engine.stop()
    async with world.container.sessions().begin() as session:
        run = await session.get(Run, start.run_id, with_for_update=True)
        if v4:  # as an earlier release (or ownership production off) stored it
            stored = read_execution_input(run.execution_input)
            request = AssemblyRequest(
                stored.task, stored.wake, Lane.NATIVE, SessionAttempt.FRESH,
                run_id=stored.run_id, provider=stored.provider, ownership=False,
                carriers=carriers_of(engine.calls.plugins, stored.provider),
            )  # fmt: skip
            run.execution_input = assemble_execution_input(request, engine.calls.plugins).envelope
        outcome = await settle_lost_run(
            session,
            run,
            engine.calls.plugins,
            Limits(max_resumes=3, wait_for_runner=timedelta(minutes=1)),
            reason="resume_failed",
        )
    assert outcome == "resuming"
    return run


async def retry_turn(world, run_id: uuid.UUID) -> RunTurn:
    async with world.container.sessions()() as session:
        return (
            await session.scalars(
                select(RunTurn).where(RunTurn.run_id == run_id, RunTurn.number == 2)
            )
        ).one()


@pytest.mark.parametrize("v4", [False, True], ids=["v5", "v4"])
async def test_a_fresh_retry_keeps_the_thread_the_carrier_and_the_envelope(
    paperclip_container, paperclip_plugin_host, paperclip_register_plugin, v4
):
    paperclip_register_plugin(EchoProvider(CARRIED), name="echo-provider")
    world, engine = await make_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    run = await lost_after_posting(world, engine, v4=v4)
    turn = await retry_turn(world, run.id)
    assert turn.kind == "fresh_retry"
    prompt, schema = turn.input["prompt"], turn.input["schema"]

    # The envelope version the run started on.
    assert schema == (EXECUTION_INPUT_V4 if v4 else EXECUTION_INPUT_V5)
    stored = read_execution_input(turn.input["executionInput"])
    assert stored.schema == schema and stored.attempt is SessionAttempt.FRESH_RETRY
    assert stored.model.prompt == prompt
    # The rules stay in the provider's system carrier, not in the user prompt.
    assert turn.input["system"] == DEFAULT_RULES.strip("\n") == stored.model.system
    assert "## Paperclip rules" not in prompt
    # The earlier thread: before the wake, and what the lost attempt posted, in order.
    thread = prompt.split("## Earlier thread", 1)[1].split("## Paperclip wake", 1)[0]
    assert thread.index(BEFORE) < thread.index(POSTED)
    assert ASK not in thread  # the wake's comment is not history
    assert LATER not in prompt
    if not v4:  # owned by the wake prompt: rendered once, the only comment a report may cite
        assert prompt.count(ASK) == 1
        assert stored.turn_context is not None
        [current] = stored.turn_context.events.comments
        assert [b.id for b in stored.completion_sources if b.kind.value == "comment"] == [
            current.id
        ]
