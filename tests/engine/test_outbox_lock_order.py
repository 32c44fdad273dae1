"""An outbox write for a run never waits on a fenced write that holds the run.

A runner's outbox rows refer to their run: writing one takes a ``KEY SHARE``
lock on the run's row (the foreign key). ``answer_again`` (a runner's
``hello``) takes the runner's outbox counter first and the run second; a
fenced write (the one-statement journal, a settlement) holds the run and
then takes the counter. When the fence locked the run ``FOR UPDATE``, the two
waited on each other and PostgreSQL ended one with ``deadlock detected`` (the
chaos run of seed 4243). The fence's ``FOR NO KEY UPDATE`` leaves the key
free, so the outbox write goes through and no cycle can form. A steer still
locks its run ``FOR UPDATE`` before queueing itself: ``answer_again`` now
takes the run before the counter, as every writer of a run does (seed 4248).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import text

from paperclip.engine.logs import outbox
from paperclip.engine.ownership.fence import lock_run
from paperclip.engine.ownership.fenced_tx import FencedTransaction
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.recovery.call_recovery import CallRecovery
from paperclip.models import Runner
from paperclip.wire.messages import FEATURE_UNSEQUENCED_RESULTS, Steer, ToolResult
from paperclip.wire.messages import ToolCall as ToolCallMessage
from tests.engine.controlled import controlled_runs, pipeline_with_link

INSTANCE = "replica-test"
RUN = uuid.UUID("00000000-0000-4000-8000-0000000000a1")

pytestmark = pytest.mark.usefixtures("fixture_kind")


@pytest.fixture
async def runner_id(paperclip_client, paperclip_container):
    """A run controlled here, and a runner whose outbox may hold its messages."""
    await controlled_runs(paperclip_client, paperclip_container, [RUN], instance=INSTANCE, epoch=1)
    runner = uuid.uuid4()
    async with paperclip_container.sessions().begin() as session:
        session.add(Runner(id=runner, name=f"lock-order-{runner}", credential_hash=runner.hex))
    yield runner
    async with paperclip_container.sessions().begin() as session:
        await session.execute(text("DELETE FROM runner_outbox WHERE runner_id = :r"), {"r": runner})
        await session.execute(text("DELETE FROM runners WHERE id = :r"), {"r": runner})
        await session.execute(text("DELETE FROM runs WHERE id = :r"), {"r": RUN})


async def _queue_a_reply(paperclip_container, runner: uuid.UUID) -> list[int]:
    """What ``answer_again`` writes: a saved result for the run, in the runner's outbox."""
    reply = ToolResult(seq=0, run_id=RUN, call_id="c1", content={"ok": True})
    async with paperclip_container.sessions().begin() as session:
        # Fail fast instead of waiting out the fenced write.
        await session.execute(text("SET LOCAL lock_timeout = '5s'"))
        return await outbox.enqueue(session, runner, [outbox.Outgoing.of(reply)])


@pytest.mark.parametrize("fence", ["plain", "session"])
async def test_an_outbox_write_goes_through_while_a_fenced_write_holds_the_run(
    runner_id, paperclip_container, fence
):
    sessions = paperclip_container.sessions()
    if fence == "plain":
        holder = FencedTransaction.begin(sessions, {RUN: 1}, instance=INSTANCE)
        async with holder as tx:
            assert list(tx.locked) == [RUN]
            seqs = await asyncio.wait_for(_queue_a_reply(paperclip_container, runner_id), 10)
    else:
        async with sessions.begin() as session:
            await lock_run(session, RUN, instance=INSTANCE, epoch=1)
            seqs = await asyncio.wait_for(_queue_a_reply(paperclip_container, runner_id), 10)
    assert len(seqs) == 1


async def _lock_waiters(paperclip_container) -> int:
    async with paperclip_container.sessions()() as session:
        return int(
            await session.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
            )
        )


async def test_answering_again_waits_for_a_steer_that_holds_the_run_before_the_counter(
    runner_id, paperclip_container, paperclip_plugin_host
):
    # A steer locks its run, then queues itself in the runner's outbox (the counter).
    # answer_again (the runner's hello) queues saved results for the same run: taking the
    # counter first, it then waited in the outbox row's foreign-key check for the run, while
    # the steer waited for the counter, and PostgreSQL ended one with deadlock detected (the
    # chaos run of seed 4248). It takes the run first now, as every writer does.
    ownership = RunOwnership()
    ownership.own(RUN, 1)
    ownership.remember_token(RUN, "run-token")
    pipeline, link, _ = await pipeline_with_link(
        paperclip_container,
        paperclip_plugin_host,
        ownership,
        instance=INSTANCE,
        features=frozenset({FEATURE_UNSEQUENCED_RESULTS}),
    )
    call = ToolCallMessage(
        seq=1,
        run_id=RUN,
        call_id="c1",
        tool="report_progress",
        arguments={"summary": "saved"},
        token="run-token",
    )
    await pipeline.admit(link, [call])  # settled, its result saved: what hello asks for again
    recovery = CallRecovery(pipeline)

    async with paperclip_container.sessions().begin() as session:
        await session.execute(text("SET LOCAL lock_timeout = '10s'"))
        # A steer locks its run FOR UPDATE, then queues the steer.
        await session.execute(text("SELECT 1 FROM runs WHERE id = :r FOR UPDATE"), {"r": RUN})
        answering = asyncio.create_task(recovery.answer_again(link, RUN, ["c1"]))
        while await _lock_waiters(paperclip_container) == 0:
            assert not answering.done(), answering.exception()
            await asyncio.sleep(0.01)
        steer = Steer(seq=0, run_id=RUN, message_id="m1", text="Also check the tests.", turn=1)
        await outbox.enqueue(session, link.runner_id, [outbox.Outgoing.of(steer)])
    await asyncio.wait_for(answering, 10)

    async with paperclip_container.sessions()() as session:
        queued = (
            await session.execute(
                text("SELECT type FROM runner_outbox WHERE runner_id = :r ORDER BY seq"),
                {"r": link.runner_id},
            )
        ).scalars()
        assert list(queued) == ["steer", "tool_result"]  # the steer, then the saved result
