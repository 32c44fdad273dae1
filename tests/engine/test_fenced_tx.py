"""A fenced transaction: plain statements and an on-demand ORM session commit or roll back as one."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select

from paperclip.engine.logs.events import NewEvent, append_rows
from paperclip.engine.ownership.fence import StaleEpochError
from paperclip.engine.ownership.fenced_tx import FencedTransaction
from paperclip.models import Run, RunEvent
from tests.engine.controlled import controlled_runs

INSTANCE = "replica-fenced"

pytestmark = pytest.mark.usefixtures("fixture_kind")


@pytest.fixture
async def run_id(paperclip_client, paperclip_container) -> uuid.UUID:
    """A running run controlled here at epoch 1."""
    (run,) = await controlled_runs(
        paperclip_client, paperclip_container, [uuid.uuid4()], instance=INSTANCE, epoch=1
    )
    return run


async def state(container, run_id: uuid.UUID) -> tuple[int, dict[str, object] | None, int]:
    """The run's event count, result and event counter, read from another session."""
    async with container.sessions()() as session:
        events = await session.scalar(
            select(func.count()).select_from(RunEvent).where(RunEvent.run_id == run_id)
        )
        run = await session.get_one(Run, run_id)
        return int(events or 0), run.result, run.last_event_seq


async def write_both(tx: FencedTransaction, run_id: uuid.UUID, result: dict[str, object]) -> None:
    """What a batch does: a plain statement, and an ORM change of the run's row."""
    added = await append_rows(tx.driver, [(run_id, "tool", [NewEvent(1, "progress", {})])])
    tx.appended(added)
    run = await tx.run(run_id)
    run.result = result


async def test_plain_statements_and_orm_changes_commit_together(run_id, paperclip_container):
    sessions = paperclip_container.sessions()
    async with FencedTransaction.begin(sessions, {run_id: 1}, instance=INSTANCE) as tx:
        assert list(tx.locked) == [run_id] and not tx.refused
        await write_both(tx, run_id, {"outcome": "done"})
        assert (await tx.run(run_id)).last_event_seq == 1  # the ORM sees the plain append
    assert await state(paperclip_container, run_id) == (1, {"outcome": "done"}, 1)


async def test_a_failure_rolls_back_both_even_after_the_sessions_own_commit(
    run_id, paperclip_container
):
    sessions = paperclip_container.sessions()
    with pytest.raises(RuntimeError):
        async with FencedTransaction.begin(sessions, {run_id: 1}, instance=INSTANCE) as tx:
            await write_both(tx, run_id, {"outcome": "done"})
            # A tool's code may commit its session: that must not end the batch's transaction.
            await tx.session().commit()
            raise RuntimeError("the settlement failed")
    assert await state(paperclip_container, run_id) == (0, None, 0)


async def test_a_run_at_another_epoch_is_refused_and_not_written(run_id, paperclip_container):
    sessions = paperclip_container.sessions()
    async with FencedTransaction.begin(sessions, {run_id: 2}, instance=INSTANCE) as tx:
        assert not tx.locked
        assert isinstance(tx.refused[run_id], StaleEpochError)
        with pytest.raises(KeyError):
            await tx.run(run_id)
