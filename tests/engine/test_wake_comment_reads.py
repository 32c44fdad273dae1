"""Seed 000: a completion report is refused in the same turn until the run read every current
wake comment, and the terminal guard re-checks the exact snapshot.

The real engine on a real PostgreSQL, driven by an in-memory runner peer. The
plugin host loads the built-ins the way ``paperclip serve`` does, honouring
``PAPERCLIP_PLUGINS_DISABLE``: with ``PAPERCLIP_PLUGINS_DISABLE=completion-guard``
the four causal cases (unread, partial, changed, foreign) go red, and the
inline-complete control stays green.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from paperclip_hookspecs.completion import (
    NATIVE_CURRENT_WAKE_COMMENTS_UNREAD,
    READ_CURRENT_WAKE_COMMENTS,
)
from sqlalchemy import event, select, update
from sqlalchemy.exc import IntegrityError

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.engine.context.snapshot import PAGE_MAX_COMMENTS
from paperclip.models import Agent, Run, WakeCommentRead, WakeCommentSnapshot
from paperclip.plugin_host import PluginHost
from tests.engine.memory_world import World, call, finished, started
from tests.support.memory import MemoryRunner

WINDOW = 100
"""The prompt's window of current comments (RenderLimits.max_inline_comments)."""
LONG = "x" * 9_000
"""Longer than the prompt shows of one comment (RenderLimits.max_comment_chars)."""


@pytest.fixture
def paperclip_plugin_host(paperclip_settings) -> PluginHost:
    """The built-ins as the server loads them, so the guard can be disabled from outside."""
    host = PluginHost()
    host.load_builtins(disable=paperclip_settings.plugins_disable)
    return host


@dataclass
class Woken:
    """A run woken for comments, and the peer driving its turn."""

    world: World
    peer: Any
    start: Any
    issue_id: uuid.UUID
    comment_ids: list[uuid.UUID]

    async def call(self, tool: str, **arguments: Any) -> Any:
        return await call(self.peer, self.start, tool, **arguments)

    async def finish(self) -> Any:
        return await self.call("finish", outcome="done", summary="Did what the comments asked.")

    async def read(self, cursor: str | None = None) -> Any:
        return await self.call(
            "read_current_wake_comments", **({"cursor": cursor} if cursor else {})
        )

    async def read_all(self, cursor: str | None = None) -> list[dict[str, Any]]:
        """Follow the cursors to the end; the pages."""
        pages = []
        while True:
            page = await self.read(cursor)
            assert not page.is_error, page.content
            pages.append(page.content)
            cursor = page.content["next_cursor"]
            if cursor is None:
                return pages

    async def edit(self, index: int, body: str) -> None:
        await self.world.container.comments().edit(
            LOCAL_OPERATOR,
            self.world.company_id,
            self.issue_id,
            self.comment_ids[index],
            body=body,
        )

    async def snapshot(self) -> WakeCommentSnapshot:
        async with self.world.container.sessions()() as session:
            return (
                await session.execute(
                    select(WakeCommentSnapshot).where(
                        WakeCommentSnapshot.run_id == self.start.run_id
                    )
                )
            ).scalar_one()

    async def end_turn(self) -> Run:
        self.peer.send(finished(self.start, answer="Done."))
        return await self.world.until_ended(self.start.run_id)


async def woken(world: World, bodies: list[str], peer: MemoryRunner | None = None) -> Woken:
    """An issue with these comments (by a person), then assigned: its first run is woken for them."""
    if peer is None:
        peer, _ = await world.connect(await world.new_runner())
    issue = await world.container.issues().create(
        LOCAL_OPERATOR,
        world.company_id,
        title="Answer the thread",
        description="Read the comments and do what they ask.",
        status="todo",
        priority="medium",
        assignee_agent_id=None,
        parent_id=None,
    )
    ids = []
    for body in bodies:
        comment = await world.container.comments().create(
            LOCAL_OPERATOR, world.company_id, issue.id, body=body
        )
        ids.append(comment.id)
    await world.container.issues().update(
        LOCAL_OPERATOR, world.company_id, issue.id, {"assignee_agent_id": world.agent_id}
    )
    return Woken(world, peer, await started(peer), issue.id, ids)


def many(n: int) -> list[str]:
    return [f"Comment {i}: please check item {i}." for i in range(1, n + 1)]


def assert_correction(result: Any, reason: str, *, cursor: str | None, restart: bool) -> None:
    assert result.is_error, result.content
    error = result.content["error"]
    assert (error["code"], error["reason"]) == (READ_CURRENT_WAKE_COMMENTS, reason), error
    assert error["correction"] == {
        "instruction": READ_CURRENT_WAKE_COMMENTS,
        "message": error["message"],
        "cursor": cursor,
        "restart": restart,
    }


# The control: a wake whose comments were all rendered in full needs no read.


async def test_a_wake_rendered_in_full_needs_no_read_and_finish_is_accepted(world):
    wake = await woken(world, many(3))
    snapshot = await wake.snapshot()
    assert (snapshot.comment_count, snapshot.read_required, snapshot.read_reason) == (
        3,
        False,
        None,
    )
    accepted = await wake.finish()
    assert not accepted.is_error and accepted.content["accepted"], accepted.content
    run = await wake.end_turn()
    assert (run.status, run.error_code) == ("succeeded", None)


# The four causal cases of the seed: each refused with the correction.


async def test_unread_is_refused_then_a_complete_read_lets_the_report_through(world):
    wake = await woken(world, many(WINDOW + 5))
    snapshot = await wake.snapshot()
    # Every current comment is in the snapshot, not only the prompt's window.
    assert (snapshot.comment_count, snapshot.read_required, snapshot.read_reason) == (
        WINDOW + 5,
        True,
        "omitted",
    )

    assert_correction(await wake.finish(), "unread", cursor=None, restart=False)
    pages = await wake.read_all()
    assert [p["page"] for p in pages] == [1, 2, 3, 4, 5, 6]
    assert {p["pages"] for p in pages} == {6} and pages[-1]["complete"]
    read = [c for p in pages for c in p["comments"]]
    # Every comment, in snapshot order, in full, with its attachment list.
    assert [c["id"] for c in read] == [str(i) for i in wake.comment_ids]
    assert [c["position"] for c in read] == list(range(1, WINDOW + 6))
    assert read[0]["body"] == "Comment 1: please check item 1."
    assert read[0]["trust"] == "trusted" and read[0]["attachments"] == []
    assert len(pages[0]["comments"]) == PAGE_MAX_COMMENTS

    accepted = await wake.finish()
    assert not accepted.is_error, accepted.content
    run = await wake.end_turn()
    # The same run, one accepted result, the task done.
    assert run.id == wake.start.run_id and run.status == "succeeded"
    assert run.result is not None and run.result["outcome"] == "done"
    assert await world.issue_status(wake.issue_id) == "done"


async def test_partial_is_refused_and_the_correction_continues_the_callers_cursor(world):
    # One comment longer than the prompt shows: a complete read is required.
    wake = await woken(world, [LONG, *many(44)])
    assert (await wake.snapshot()).read_reason == "truncated"
    first = await wake.read()
    second = await wake.read(first.content["next_cursor"])
    assert second.content["page"] == 2 and second.content["pages"] == 3
    assert len(first.content["comments"][0]["body"]) == len(LONG)  # in full, not cut

    refused = await wake.finish()
    # Regression: the correction restarted a partial read at page one.
    assert_correction(refused, "partial", cursor=second.content["next_cursor"], restart=False)
    # Restarting is refused by the reader: pages are read in order.
    restarted = await wake.read()
    assert restarted.is_error
    assert restarted.content["error"]["code"] == "wake_comments_cursor_out_of_order"
    assert restarted.content["error"]["expected_cursor"] == second.content["next_cursor"]

    last = await wake.read(refused.content["error"]["correction"]["cursor"])
    assert not last.is_error and last.content["complete"]
    assert not (await wake.finish()).is_error
    assert (await wake.end_turn()).status == "succeeded"


async def test_a_changed_snapshot_is_refused_and_the_read_restarts(world):
    wake = await woken(world, many(WINDOW + 1))
    pages = await wake.read_all()
    await wake.edit(3, "Comment 4, edited: the item changed.")

    assert_correction(await wake.finish(), "changed_snapshot", cursor=None, restart=True)
    # A cursor of the old snapshot is refused with its own code.
    stale = await wake.read(pages[0]["next_cursor"])
    assert stale.is_error
    assert stale.content["error"]["code"] == "wake_comments_snapshot_changed"
    assert stale.content["error"]["restart"] is True

    again = await wake.read_all()
    assert again[0]["snapshot_revision"] != pages[0]["snapshot_revision"]
    assert again[0]["comments"][3]["body"] == "Comment 4, edited: the item changed."
    assert not (await wake.finish()).is_error
    assert (await wake.end_turn()).status == "succeeded"


async def test_a_partial_read_of_a_changed_snapshot_restarts_rather_than_continues(world):
    wake = await woken(world, many(WINDOW + 1))
    first = await wake.read()
    await wake.read(first.content["next_cursor"])
    await wake.edit(0, "Comment 1, edited.")

    assert_correction(await wake.finish(), "changed_snapshot", cursor=None, restart=True)


async def test_a_foreign_complete_receipt_is_refused(world):
    wake = await woken(world, many(WINDOW + 1))
    snapshot = await wake.snapshot()
    other = await other_run(world)
    # Every page of this very snapshot, at its current revision, read by another
    # agent's run on another task: it proves nothing for this run.
    pages = await page_count_and_revision(world, wake)
    async with world.container.sessions().begin() as session:
        for page in range(1, pages["pages"] + 1):
            session.add(
                WakeCommentRead(
                    snapshot_id=snapshot.id,
                    company_id=world.company_id,
                    run_id=other.id,
                    issue_id=other.issue_id,
                    agent_id=other.agent_id,
                    snapshot_revision=pages["revision"],
                    page=page,
                    complete=page == pages["pages"],
                    next_cursor=None,
                )
            )

    assert_correction(await wake.finish(), "foreign", cursor=None, restart=False)
    await wake.read_all()
    assert not (await wake.finish()).is_error


async def page_count_and_revision(world: World, wake: Woken) -> dict[str, Any]:
    """The snapshot's page count and current revision, as the reader reports them to a run."""
    from paperclip.engine.context.snapshot import snapshot_entries, split_pages, state_revision

    snapshot = await wake.snapshot()
    async with world.container.sessions()() as session:
        entries = await snapshot_entries(session, snapshot.id, lengths=True)
    return {"pages": len(split_pages(entries)), "revision": state_revision(entries)}


async def other_run(world: World) -> Run:
    """A finished run of another agent on another task of the same company."""
    async with world.container.sessions().begin() as session:
        me = await session.get_one(Agent, world.agent_id)
        agent = Agent(
            id=uuid.uuid4(),
            company_id=world.company_id,
            name=f"reviewer-{uuid.uuid4().hex[:6]}",
            role="",
            provider=me.provider,
            provider_config={},
        )
        session.add(agent)
        await session.flush()
    issue = await world.container.issues().create(
        LOCAL_OPERATOR,
        world.company_id,
        title="Another task",
        description="",
        status="todo",
        priority="medium",
        assignee_agent_id=None,
        parent_id=None,
    )
    async with world.container.sessions().begin() as session:
        run = Run(
            id=uuid.uuid4(),
            company_id=world.company_id,
            agent_id=agent.id,
            issue_id=issue.id,
            provider=agent.provider,
            status="failed",
        )
        session.add(run)
    return run


# The terminal guard: the same validator after the provider settles its turn.


async def test_a_comment_edited_after_a_complete_read_fails_the_run_at_the_end(world):
    wake = await woken(world, many(WINDOW + 1))
    await wake.read_all()
    assert not (await wake.finish()).is_error
    await wake.edit(50, "Comment 51, edited after the read.")

    run = await wake.end_turn()
    assert (run.status, run.error_code) == ("failed", NATIVE_CURRENT_WAKE_COMMENTS_UNREAD)
    assert await world.issue_status(wake.issue_id) == "todo"


async def test_a_run_that_blocks_without_reading_ends_blocked(world):
    wake = await woken(world, many(WINDOW + 1))
    blocked = await wake.call("block", reason="I need the staging credentials.")
    assert not blocked.is_error, blocked.content
    run = await wake.end_turn()
    assert (run.status, run.status_reason) == ("succeeded", "task_blocked")


# The reader's own errors, and its receipts.


async def test_the_reader_refuses_cursors_it_did_not_give_and_pages_out_of_order(world):
    wake = await woken(world, many(WINDOW + 1))
    bogus = await wake.read("page-2")
    assert bogus.is_error and bogus.content["error"]["code"] == "wake_comments_cursor_invalid"
    first = await wake.read()
    skip = first.content["next_cursor"].replace(":2:", ":4:")
    ahead = await wake.read(skip)
    assert ahead.is_error
    assert ahead.content["error"]["code"] == "wake_comments_cursor_out_of_order"
    assert ahead.content["error"]["expected_cursor"] == first.content["next_cursor"]


async def test_each_page_is_one_receipt_bound_to_the_run_task_agent_and_company(world):
    wake = await woken(world, many(WINDOW + 1))
    pages = await wake.read_all()
    again = await wake.read(pages[-2]["next_cursor"])  # the last page, read twice
    assert again.content == pages[-1]
    async with world.container.sessions()() as session:
        reads = (
            await session.execute(
                select(WakeCommentRead).where(WakeCommentRead.run_id == wake.start.run_id)
            )
        ).scalars()
        reads = list(reads)
    assert sorted(r.page for r in reads) == list(range(1, len(pages) + 1))
    assert {(r.company_id, r.issue_id, r.agent_id) for r in reads} == {
        (world.company_id, wake.issue_id, world.agent_id)
    }
    assert [r.complete for r in sorted(reads, key=lambda r: r.page)][-2:] == [False, True]


async def test_a_run_without_a_task_reads_an_empty_complete_page(world):
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
    page = await call(peer, start, "read_current_wake_comments")
    assert page.content["comments"] == [] and page.content["complete"] is True


async def test_a_snapshot_bound_to_another_agent_is_an_error_not_a_correction(world):
    wake = await woken(world, many(WINDOW + 1))
    other = await other_run(world)
    async with world.container.sessions().begin() as session:
        await session.execute(
            update(WakeCommentSnapshot)
            .where(WakeCommentSnapshot.run_id == wake.start.run_id)
            .values(agent_id=other.agent_id)
        )
    refused = await wake.finish()
    assert refused.is_error and refused.content["error"]["code"] == "run_binding_mismatch"
    assert "correction" not in refused.content["error"]


async def test_finish_costs_one_binding_query_and_the_snapshots_own_comments(world):
    wake = await woken(world, many(WINDOW + 1))
    engine = world.container.engine().sync_engine
    statements: list[str] = []

    def record(_conn, _cursor, statement, *_args):
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        await wake.finish()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    tables = re.compile(r"\b(wake_snapshots|wake_snapshot_comments|wake_comment_reads|comments)\b")
    reads = [" ".join(s.split()) for s in statements if tables.search(s)]
    # One exact binding query (the run's snapshot and its newest receipt) ...
    assert len(reads) == 3, reads
    assert "FROM wake_snapshots LEFT OUTER JOIN LATERAL" in reads[0]
    assert reads[0].endswith("WHERE wake_snapshots.run_id = $3::UUID")
    # ... and the snapshot's own comments, never the issue's thread ...
    assert "FROM wake_snapshot_comments JOIN comments" in reads[1]
    assert "WHERE wake_snapshot_comments.snapshot_id = $1::UUID" in reads[1]
    # ... and, for the guards' view of the run, the comments this run posted (bounded).
    assert "comments.created_by_run_id = " in reads[2] and " LIMIT " in reads[2], reads[2]


async def test_one_snapshot_per_run_and_one_receipt_per_page_by_constraint(world):
    wake = await woken(world, many(WINDOW + 1))
    first = (await wake.read()).content
    snapshot = await wake.snapshot()
    twin = WakeCommentSnapshot(
        company_id=world.company_id,
        run_id=wake.start.run_id,
        issue_id=wake.issue_id,
        agent_id=world.agent_id,
        revision=snapshot.revision,
        comment_count=0,
        read_required=False,
    )
    page_again = WakeCommentRead(
        snapshot_id=snapshot.id,
        company_id=world.company_id,
        run_id=wake.start.run_id,
        issue_id=wake.issue_id,
        agent_id=world.agent_id,
        snapshot_revision=first["snapshot_revision"],
        page=1,
        complete=False,
    )
    for row in (twin, page_again):
        with pytest.raises(IntegrityError):
            async with world.container.sessions().begin() as session:
                session.add(row)
