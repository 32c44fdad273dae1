"""The batched tool journal on a real PostgreSQL: fenced admission, exactly-once settlement.

Execution goes through the engine's own call pipeline, on a link whose
transport is in memory.
"""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from sqlalchemy import select

from paperclip.db.driver import driver_connection
from paperclip.engine.logs import journal
from paperclip.engine.ownership.fence import lock_runs
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.models import Run, RunEvent, ToolCall, ToolCallStatus
from paperclip.wire.messages import ToolResult
from tests.engine.controlled import controlled_runs, pipeline_with_link

INSTANCE = "replica-test"

pytestmark = pytest.mark.usefixtures("fixture_kind")


@pytest.fixture
async def runs(paperclip_client, paperclip_container):
    """Two running runs of one agent, controlled by INSTANCE at epoch 3."""
    return await controlled_runs(
        paperclip_client,
        paperclip_container,
        [uuid.uuid4(), uuid.uuid4()],
        instance=INSTANCE,
        epoch=3,
    )


async def admit(container, requests):
    async with container.sessions()() as session:
        return await journal.admit_many(
            await driver_connection(session), requests, instance=INSTANCE
        )


def progress(run_id, call_id, epoch=3):
    return journal.Request(run_id, epoch, call_id, "report_progress", {"summary": call_id})


async def stored_calls(container, runs):
    async with container.sessions()() as session:
        rows = await session.execute(
            select(ToolCall).where(ToolCall.run_id.in_(runs)).order_by(ToolCall.id)
        )
        return list(rows.scalars())


async def test_calls_of_several_runs_are_admitted_in_one_statement_with_their_admission(
    paperclip_container, runs
):
    admitted = await admit(
        paperclip_container,
        [progress(runs[0], "a"), progress(runs[1], "b"), progress(runs[0], "c")],
    )

    assert {key: fresh for key, (_, fresh) in admitted.items()} == {
        (runs[0], "a"): True,
        (runs[1], "b"): True,
        (runs[0], "c"): True,
    }
    rows = await stored_calls(paperclip_container, runs)
    # Journal ids follow the order the calls came in.
    assert [r.call_id for r in rows] == ["a", "b", "c"]
    assert {(r.status, r.admitted_by, r.admitted_epoch) for r in rows} == {
        (ToolCallStatus.PENDING, INSTANCE, 3)
    }


async def test_a_replayed_call_is_the_same_input(paperclip_container, runs):
    [(first_id, _)] = (await admit(paperclip_container, [progress(runs[0], "a")])).values()

    replayed = await admit(paperclip_container, [progress(runs[0], "a"), progress(runs[0], "b")])

    assert replayed[(runs[0], "a")] == (first_id, False)
    assert replayed[(runs[0], "b")][1] is True
    assert [r.call_id for r in await stored_calls(paperclip_container, runs)] == ["a", "b"]


async def test_a_stale_epoch_admits_nothing_for_its_run(paperclip_container, runs):
    admitted = await admit(
        paperclip_container, [progress(runs[0], "old", epoch=2), progress(runs[1], "ok")]
    )

    assert set(admitted) == {(runs[1], "ok")}
    assert [r.call_id for r in await stored_calls(paperclip_container, runs)] == ["ok"]
    async with paperclip_container.sessions().begin() as session:
        locked, refused = await lock_runs(session, {runs[0]: 2, runs[1]: 3}, instance=INSTANCE)
    assert set(locked) == {runs[1]}
    assert refused[runs[0]].details == {"current_epoch": 3, "write_epoch": 2}


@pytest.fixture
async def pipeline(paperclip_container, paperclip_plugin_host, runs):
    """The engine's call pipeline, controlling ``runs`` at epoch 3, and a runner link in memory."""
    ownership = RunOwnership()
    for run_id in runs:
        ownership.own(run_id, 3)
    pipeline, link, _ = await pipeline_with_link(
        paperclip_container, paperclip_plugin_host, ownership, instance=INSTANCE
    )
    return pipeline, link


async def dispatch(pipeline, runs, call_ids, *, stale=False):
    """One batch through the engine's execute-and-settle; the replies it queued.

    ``stale`` hands the pipeline the calls as just admitted, as a dispatch that
    raced another would hold them, instead of letting it read their state.
    """
    engine, link = pipeline
    async with engine.sessions() as session:
        rows = (await session.execute(select(ToolCall).where(ToolCall.id.in_(call_ids)))).scalars()
        batch = [(row.run_id, row.id, journal.CallInput.of(row) if stale else None) for row in rows]
    return await engine.execute_batch(link.runner_id, batch)


async def events_of(container, run_id):
    async with container.sessions()() as session:
        rows = await session.execute(
            select(RunEvent.type, RunEvent.seq).where(RunEvent.run_id == run_id)
        )
        return [tuple(row) for row in rows]


async def test_a_call_settles_once_and_its_effect_is_written_once(
    paperclip_container, runs, pipeline
):
    admitted = await admit(paperclip_container, [progress(runs[0], "a"), progress(runs[1], "b")])
    call_ids = [call_id for call_id, _ in admitted.values()]

    replies = await dispatch(pipeline, runs, call_ids)
    assert [(type(m), m.call_id) for _, m in replies] == [(ToolResult, "a"), (ToolResult, "b")]
    assert [seq for seq, _ in replies] == [1, 2]  # the runner's outbox numbers them

    rows = await stored_calls(paperclip_container, runs)
    assert {r.status for r in rows} == {ToolCallStatus.SETTLED}
    assert all(r.result["receipt"]["outcome"] == "applied" for r in rows)

    # Dispatched again, the calls answer their saved results and do nothing else.
    again = await dispatch(pipeline, runs, call_ids)
    assert {m.call_id: m.content for _, m in again} == {m.call_id: m.content for _, m in replies}

    # A dispatch that raced another (it holds the calls as pending) cannot commit:
    # the database refuses the second progress event, and everything rolls back.
    with pytest.raises(asyncpg.UniqueViolationError):
        await dispatch(pipeline, runs, call_ids, stale=True)
    for run_id in runs:
        assert await events_of(paperclip_container, run_id) == [("progress", 1)]


async def test_a_second_settlement_of_a_call_rolls_back(paperclip_container, runs, pipeline):
    [(call_id, _)] = (
        await admit(
            paperclip_container, [journal.Request(runs[0], 3, "read", "get_task_context", {})]
        )
    ).values()
    await dispatch(pipeline, runs, [call_id])
    [settled] = await stored_calls(paperclip_container, runs)

    # A read has no effect for a constraint to refuse: the settlement itself does.
    with pytest.raises(journal.AlreadySettledError):
        await dispatch(pipeline, runs, [call_id], stale=True)
    [after] = await stored_calls(paperclip_container, runs)
    assert (after.result, after.settled_at) == (settled.result, settled.settled_at)


async def test_the_effects_of_a_batch_are_logged_in_its_settlement_gap_free_per_run(
    paperclip_container, runs, pipeline
):
    # A run's progress event used to be one more statement before the settlement;
    # it is now part of it, numbered after the run's counter like any append.
    admitted = await admit(
        paperclip_container,
        [progress(runs[0], "a"), progress(runs[1], "b"), progress(runs[0], "c")],
    )
    await dispatch(pipeline, runs, [call_id for call_id, _ in admitted.values()])

    assert await events_of(paperclip_container, runs[0]) == [("progress", 1), ("progress", 2)]
    assert await events_of(paperclip_container, runs[1]) == [("progress", 1)]
    async with paperclip_container.sessions()() as session:
        rows = await session.execute(select(Run.id, Run.last_event_seq).where(Run.id.in_(runs)))
        counters = {run_id: last for run_id, last in rows}
    assert counters == {runs[0]: 2, runs[1]: 1}
    summaries = {
        row.call_id: row.result["receipt"]["outcome"]
        for row in await stored_calls(paperclip_container, runs)
    }
    assert summaries == {"a": "applied", "b": "applied", "c": "applied"}
