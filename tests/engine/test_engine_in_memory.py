"""The engine's branches, driven in memory: a real PostgreSQL, the real engine, a runner without a socket.

The runner peer speaks the typed wire contract over an in-memory transport,
so every way a run can end, and every error a tool can answer, is reached
here without processes.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from sqlalchemy import text

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.models import Run, Runner, ToolReceipt
from paperclip.wire import messages as wire
from tests.engine.memory_world import (
    PROVIDER,
    call,
    eventually,
    finished,
    started,
)
from tests.support.memory import MemoryRunner

# How a run ends


async def test_provider_turn_failed_puts_the_issue_back_to_todo(world):
    peer, _ = await world.connect(await world.new_runner())
    issue_id = await world.assign()
    start = await started(peer)
    assert await world.issue_status(issue_id) == "in_progress"

    peer.send(finished(start, status="failed", error="the model endpoint refused the key"))
    await peer.expect(wire.Close, run_id=start.run_id)
    run = await world.until_ended(start.run_id)
    assert (run.status, run.error_code) == ("failed", "provider_turn_failed")
    assert run.error_message == "the model endpoint refused the key"
    assert await world.issue_status(issue_id) == "todo"


async def test_finish_not_called_fails_the_run_and_requeues_the_issue(world):
    peer, _ = await world.connect(await world.new_runner())
    issue_id = await world.assign()
    start = await started(peer)

    peer.send(finished(start, answer="I looked around."))
    run = await world.until_ended(start.run_id)
    assert (run.status, run.error_code, run.status_reason) == (
        "failed",
        "finish_not_called",
        "finish_not_called",
    )
    assert await world.issue_status(issue_id) == "todo"
    assert run.presentation is None  # a failed run presents nothing


async def test_the_block_tool_ends_the_run_with_the_issue_blocked(world):
    peer, _ = await world.connect(await world.new_runner())
    issue_id = await world.assign()
    start = await started(peer)

    result = await call(peer, start, "block", reason="I need the staging credentials.")
    assert result.content["accepted"] and result.content["outcome"] == "blocked"
    again = await call(peer, start, "finish", outcome="done", summary="done anyway")
    assert again.is_error and again.content["error"]["code"] == "already_finished"

    peer.send(finished(start, answer="Blocked on credentials."))
    run = await world.until_ended(start.run_id)
    assert (run.status, run.status_reason) == ("succeeded", "task_blocked")
    assert await world.issue_status(issue_id) == "blocked"


async def test_a_paused_agent_is_not_claimed_until_it_is_resumed(world):
    peer, _ = await world.connect(await world.new_runner())
    await world.container.agents().update(
        LOCAL_OPERATOR,
        world.company_id,
        world.agent_id,
        {"status": "paused"},
        check_config=world.check_config,
    )
    await world.assign()
    assert await world.engine.claim_wakes() == 0
    with pytest.raises(TimeoutError):
        await peer.expect(wire.StartTurn, within=0.5)

    await world.container.agents().update(
        LOCAL_OPERATOR,
        world.company_id,
        world.agent_id,
        {"status": "active"},
        check_config=world.check_config,
    )
    world.engine.nudge()
    await started(peer)


# The tools' error paths


async def test_tool_errors_name_what_is_wrong(world):
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    start = await started(peer)

    unknown = await call(peer, start, "delete_repository")
    assert unknown.is_error and unknown.content["error"]["code"] == "unknown_tool"
    invalid = await call(peer, start, "post_comment", body="")
    assert invalid.is_error and invalid.content["error"]["code"] == "invalid_arguments"
    assert "post_comment" in invalid.content["error"]["message"]


async def test_a_run_without_a_task_has_nothing_to_comment_on(world):
    peer, _ = await world.connect(await world.new_runner())
    await world.container.wakes().wake_agent(
        LOCAL_OPERATOR,
        world.company_id,
        world.agent_id,
        issue_id=None,
        reason="look around",
        payload={},
        idempotency_key=None,
    )
    start = await started(peer)

    context = await call(peer, start, "get_task_context")
    assert context.content == {"issue": None, "comments": []}
    comment = await call(peer, start, "post_comment", body="hello")
    assert comment.is_error and comment.content["error"]["code"] == "no_task"


async def test_a_receipt_of_another_run_is_refused(world):
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    start = await started(peer)
    other = await world.assign("another task")
    # A receipt stored under this run's command id but naming another run (the
    # command id embeds the run, so only corrupted data can look like this).
    async with world.container.sessions().begin() as session:
        session.add(
            ToolReceipt(
                command_id=f"{start.run_id}:cmd:c-1",
                company_id=world.company_id,
                run_id=await _any_other_run(session, start.run_id, other),
                tool="post_comment",
                state_revision="x",
                result={},
            )
        )
    refused = await call(peer, start, "post_comment", body="hi", command_id="c-1")
    assert refused.is_error and refused.content["error"]["code"] == "foreign_receipt"


async def _any_other_run(session: Any, run_id: uuid.UUID, issue_id: uuid.UUID) -> uuid.UUID:
    other = Run(
        id=uuid.uuid4(),
        company_id=(await session.get(Run, run_id)).company_id,
        agent_id=(await session.get(Run, run_id)).agent_id,
        issue_id=issue_id,
        provider=PROVIDER,
        status="failed",
    )
    session.add(other)
    await session.flush()
    return other.id


# Runner connections


async def test_the_steer_result_is_a_run_event(world):
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    start = await started(peer)

    peer.send(wire.SteerResult(seq=0, run_id=start.run_id, message_id="m-1", acknowledged=True))
    peer.send(wire.SteerResult(seq=0, run_id=start.run_id, message_id="m-2", acknowledged=False))
    events = await eventually(lambda: world.events(start.run_id), lambda e: len(e) >= 2)
    assert events == ["steering_acknowledgement", "steer_refused"]


async def test_a_runner_replacing_its_own_connection_keeps_its_runs(world):
    runner_id = await world.new_runner()
    first, first_task = await world.connect(runner_id)
    await world.assign()
    start = await started(first)

    second = MemoryRunner(instance=first.instance)  # the same process, a new connection
    _, second_task = await world.connect(
        runner_id, second, runs=[wire.HostedRun(run_id=start.run_id)]
    )
    await asyncio.wait_for(first.transport.is_closed.wait(), 5)
    assert first.transport.closed[0] == wire.CLOSE_REPLACED
    await asyncio.wait_for(first_task, 5)

    # The run is still controlled here, through the new connection.
    result = await call(second, start, "get_task_context")
    assert not result.is_error
    second.send(finished(start, status="failed", error="stop"))
    await world.until_ended(start.run_id)
    second.transport.hang_up()
    await asyncio.wait_for(second_task, 5)


async def test_a_runner_that_lost_its_run_leaves_it_lost_not_failed(world):
    runner_id = await world.new_runner()
    first, first_task = await world.connect(runner_id)
    issue_id = await world.assign()
    start = await started(first)
    first.transport.hang_up()
    await asyncio.wait_for(first_task, 5)

    # A new process of the runner (new instance), hosting nothing: the turn is gone,
    # the run is not. Without a recovery policy installed nothing resumes it here.
    await world.connect(runner_id, MemoryRunner(), runs=[])
    turn = await eventually(
        lambda: world.turn(start.run_id, 1), lambda t: t is not None and t.status == "lost"
    )
    assert turn.error_code == "runner_restarted"
    run = await world.run(start.run_id)
    assert (run.status, run.phase, run.turn) == ("running", "turn", 1)
    assert start.run_id not in world.engine.ownership  # handed over for recovery
    assert await world.issue_status(issue_id) == "in_progress"


async def test_stopping_releases_the_leases_for_another_replica(world):
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    start = await started(peer)

    await world.engine.stop()
    async with world.container.sessions()() as session:
        expired = (
            await session.execute(
                text("SELECT lease_expires_at <= now() FROM runs WHERE id = :id"),
                {"id": start.run_id},
            )
        ).scalar_one()
    assert expired  # adoptable at once, not after the lease
    assert world.engine.ownership.runs() == []


async def test_stopping_releases_a_lease_its_bookkeeping_missed(world):
    """A reconciler pass cancelled by the stop between its adoption's commit and its
    bookkeeping leaves a lease the ownership map does not know of: it goes too."""
    peer, serving = await world.connect(await world.new_runner())
    await world.assign()
    start = await started(peer)
    peer.transport.hang_up()  # its runner gone, the run is recovery's
    await asyncio.wait_for(serving, 5)
    assert start.run_id not in world.engine.ownership
    async with world.container.sessions().begin() as session:
        # The adoption committed; the pass was cancelled before it noted the run as its own.
        await session.execute(
            text(
                "UPDATE runs SET controller_instance = :me,"
                " controller_epoch = controller_epoch + 1,"
                " lease_expires_at = now() + interval '1 hour' WHERE id = :id"
            ),
            {"id": start.run_id, "me": world.engine.instance},
        )

    await world.engine.stop()
    async with world.container.sessions()() as session:
        expired = (
            await session.execute(
                text("SELECT lease_expires_at <= now() FROM runs WHERE id = :id"),
                {"id": start.run_id},
            )
        ).scalar_one()
    assert expired


# Stopping


async def test_a_stop_returns_once_each_connection_has_let_its_runs_go(world):
    peer, serving = await world.connect(await world.new_runner())
    await world.assign()
    start = await started(peer)

    await world.engine.stop()
    # The connection's last transaction (letting its runs go) has committed: none
    # outlives the engine holding row locks.
    assert serving.done()
    async with world.container.sessions()() as session:
        runner = await session.get(Runner, (await session.get(Run, start.run_id)).runner_id)
    assert runner.replica is None
