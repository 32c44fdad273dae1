"""A self-contained call (``report_progress``) journaled by one statement, on a real PostgreSQL.

Its admission, result, receipt, log entry and reply are written together, so
its journal row is never pending; what that statement cannot take (a replay,
a command id the model named, a run past the fence or over its budget) takes
the two-step path, with the same promises as before.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select, update

from paperclip.engine.ownership.fence import StaleEpochError
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.models import (
    Run,
    RunEvent,
    Runner,
    RunnerMessage,
    ToolCall,
    ToolCallStatus,
    ToolReceipt,
)
from paperclip.wire import messages as wire
from tests.engine.controlled import controlled_runs, pipeline_with_link

INSTANCE = "replica-test"
TOKEN = "run-token"

pytestmark = pytest.mark.usefixtures("fixture_kind")


@pytest.fixture
async def runs(paperclip_client, paperclip_container):
    return await controlled_runs(
        paperclip_client,
        paperclip_container,
        [uuid.uuid4(), uuid.uuid4()],
        instance=INSTANCE,
        epoch=3,
    )


@pytest.fixture
async def engine(paperclip_container, paperclip_plugin_host, runs):
    """The call pipeline controlling ``runs`` at epoch 3 (their tokens verified), a link, and
    the link's transport."""
    ownership = RunOwnership()
    for run_id in runs:
        ownership.own(run_id, 3)
        ownership.remember_token(run_id, TOKEN)
    return await pipeline_with_link(
        paperclip_container, paperclip_plugin_host, ownership, instance=INSTANCE
    )


def call(seq, run_id, call_id, arguments=None, tool="report_progress"):
    return wire.ToolCall(
        seq=seq,
        run_id=run_id,
        call_id=call_id,
        tool=tool,
        arguments={"summary": call_id} if arguments is None else arguments,
        token=TOKEN,
    )


def sent(transport):
    """The frames the engine sent, decoded."""
    frames = []
    while not transport.outgoing.empty():
        frames.append(wire.decode_to_runner(transport.outgoing.get_nowait()))
    return frames


async def rows(container, model, *where):
    async with container.sessions()() as session:
        return list((await session.execute(select(model).where(*where))).scalars())


async def test_a_self_contained_call_is_one_settled_row_with_its_receipt_event_and_reply(
    paperclip_container, runs, engine
):
    pipeline, link, transport = engine
    await pipeline.admit(link, [call(1, runs[0], "a"), call(2, runs[1], "b")])

    calls = await rows(paperclip_container, ToolCall, ToolCall.run_id.in_(runs))
    assert {(c.call_id, c.status) for c in calls} == {
        ("a", ToolCallStatus.SETTLED),
        ("b", ToolCallStatus.SETTLED),
    }
    for c in calls:
        assert (c.admitted_by, c.admitted_epoch, c.settled_by, c.settled_epoch) == (
            INSTANCE,
            3,
            INSTANCE,
            3,
        )
        # The row is the receipt of the call's own command id: no receipt row beside it.
        assert c.result["receipt"] == {
            "command_id": f"{c.run_id}:{c.call_id}",
            "outcome": "applied",
            "state_revision": c.state_revision,
        }
    assert await rows(paperclip_container, ToolReceipt, ToolReceipt.run_id.in_(runs)) == []
    events = await rows(paperclip_container, RunEvent, RunEvent.run_id.in_(runs))
    assert sorted((e.run_id, e.seq, e.type, e.payload["summary"]) for e in events) == sorted(
        [(runs[0], 1, "progress", "a"), (runs[1], 1, "progress", "b")]
    )
    # Each event's replay key is its call's journal id.
    assert {(e.source_instance, e.source_seq) for e in events} == {("tool", c.id) for c in calls}
    outbox = await rows(
        paperclip_container, RunnerMessage, RunnerMessage.runner_id == link.runner_id
    )
    assert [(m.seq, m.type, m.payload["call_id"]) for m in outbox] == [
        (1, "tool_result", "a"),
        (2, "tool_result", "b"),
    ]
    # Answered at once, from the receive side: nothing is left to dispatch.
    replies = sent(transport)
    assert [(r.seq, r.call_id, r.is_error) for r in replies] == [(1, "a", False), (2, "b", False)]
    assert [r.content for r in replies] == [m.payload["content"] for m in outbox]
    assert link.admitted.empty() and link.last_in == 2


async def test_a_runner_that_takes_unsequenced_results_gets_them_outside_its_outbox(
    paperclip_container, paperclip_plugin_host, runs
):
    ownership = RunOwnership()
    for run_id in runs:
        ownership.own(run_id, 3)
        ownership.remember_token(run_id, TOKEN)
    pipeline, link, transport = await pipeline_with_link(
        paperclip_container,
        paperclip_plugin_host,
        ownership,
        instance=INSTANCE,
        features=frozenset({wire.FEATURE_UNSEQUENCED_RESULTS}),
    )
    await pipeline.admit(link, [call(1, runs[0], "a"), call(2, runs[1], "b")])

    replies = sent(transport)
    assert [(r.seq, r.call_id, r.is_error) for r in replies] == [(0, "a", False), (0, "b", False)]
    # The saved result is the reply; the runner's outbox and its counter are untouched.
    calls = {
        c.call_id: c for c in await rows(paperclip_container, ToolCall, ToolCall.run_id.in_(runs))
    }
    assert [r.content for r in replies] == [calls["a"].result, calls["b"].result]
    assert {c.status for c in calls.values()} == {ToolCallStatus.SETTLED}
    assert (
        await rows(paperclip_container, RunnerMessage, RunnerMessage.runner_id == link.runner_id)
        == []
    )
    [runner] = await rows(paperclip_container, Runner, Runner.id == link.runner_id)
    assert runner.out_seq == 0
    assert len(await rows(paperclip_container, RunEvent, RunEvent.run_id.in_(runs))) == 2
    assert link.last_in == 2 and link.last_sent == 0

    # Missed (the connection ended first), the call is replayed after a reconnect: its
    # saved result comes again through the outbox, sequenced.
    await pipeline.admit(link, [call(3, runs[0], "a")])
    await pipeline.dispatch(link, [link.admitted.get_nowait()])
    [again] = sent(transport)
    assert (again.seq, again.call_id, again.content) == (1, "a", calls["a"].result)
    assert len(await rows(paperclip_container, RunEvent, RunEvent.run_id.in_(runs))) == 2


async def test_a_replayed_self_contained_call_gets_its_saved_result_and_nothing_is_written_twice(
    paperclip_container, runs, engine
):
    pipeline, link, transport = engine
    await pipeline.admit(link, [call(1, runs[0], "a")])
    [first] = sent(transport)

    # The runner replays it (after a reconnect), twice in one batch even.
    await pipeline.admit(link, [call(2, runs[0], "a"), call(3, runs[0], "a")])
    while not link.admitted.empty():
        await pipeline.dispatch(link, [link.admitted.get_nowait()])

    again = sent(transport)
    assert [r.content for r in again] == [first.content, first.content]
    [row] = await rows(paperclip_container, ToolCall, ToolCall.run_id == runs[0])
    assert row.result == first.content
    events = await rows(paperclip_container, RunEvent, RunEvent.run_id == runs[0])
    assert [e.seq for e in events] == [1]


async def test_a_command_id_the_model_named_takes_the_two_step_path_and_keeps_its_receipt_row(
    paperclip_container, runs, engine
):
    pipeline, link, transport = engine
    named = {"summary": "once", "command_id": "note-1"}
    await pipeline.admit(link, [call(1, runs[0], "a", named)])
    [pending] = await rows(paperclip_container, ToolCall, ToolCall.run_id == runs[0])
    assert pending.status == ToolCallStatus.PENDING  # admitted first, then dispatched
    await pipeline.dispatch(link, [link.admitted.get_nowait()])
    await pipeline.admit(link, [call(2, runs[0], "b", named)])
    await pipeline.dispatch(link, [link.admitted.get_nowait()])

    applied, duplicate = sent(transport)
    assert applied.content["receipt"]["outcome"] == "applied"
    assert duplicate.content["receipt"]["outcome"] == "duplicate"
    [receipt] = await rows(paperclip_container, ToolReceipt, ToolReceipt.run_id == runs[0])
    assert receipt.command_id == f"{runs[0]}:cmd:note-1"
    calls = await rows(paperclip_container, ToolCall, ToolCall.run_id == runs[0])
    assert [c.state_revision for c in calls] == [None, None]
    events = await rows(paperclip_container, RunEvent, RunEvent.run_id == runs[0])
    assert len(events) == 1  # the command's effect happened once


async def test_invalid_arguments_and_a_spent_budget_are_answered_the_two_step_way(
    paperclip_container, runs, engine
):
    pipeline, link, transport = engine
    async with paperclip_container.sessions().begin() as session:
        await session.execute(
            update(Run).where(Run.id == runs[1]).values(budget_stop_at=Run.created_at)
        )
    await pipeline.admit(link, [call(1, runs[0], "bad", {"summary": ""}), call(2, runs[1], "b")])
    await pipeline.dispatch(link, [link.admitted.get_nowait(), link.admitted.get_nowait()])

    codes = {r.call_id: r.content["error"]["code"] for r in sent(transport)}
    assert codes == {"bad": "invalid_arguments", "b": "budget_exceeded"}
    assert await rows(paperclip_container, RunEvent, RunEvent.run_id.in_(runs)) == []


async def test_a_call_past_the_fence_is_not_recorded_and_the_link_is_stale(
    paperclip_container, runs, engine
):
    pipeline, link, transport = engine
    # Another controller adopted the run (its epoch moved) while this one still held it.
    async with paperclip_container.sessions().begin() as session:
        await session.execute(update(Run).where(Run.id == runs[0]).values(controller_epoch=4))

    with pytest.raises(StaleEpochError):
        await pipeline.admit(link, [call(1, runs[0], "a"), call(2, runs[1], "b")])

    # The other run's call is journaled and answered; nothing of the adopted run's.
    calls = await rows(paperclip_container, ToolCall, ToolCall.run_id.in_(runs))
    assert [(c.run_id, c.status) for c in calls] == [(runs[1], ToolCallStatus.SETTLED)]
    assert [r.call_id for r in sent(transport)] == ["b"]
    assert await rows(paperclip_container, RunEvent, RunEvent.run_id == runs[0]) == []
