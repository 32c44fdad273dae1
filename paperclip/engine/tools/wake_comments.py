"""``read_current_wake_comments``: the run's wake snapshot in full, one page at a time, in order.

Each page read records a read receipt bound to the run, its company, task and
agent, at the snapshot's current revision (``wake_comment_reads``, one row per
page by a unique constraint). Pages are read in order: the first without a
cursor, each next one with the cursor the page before returned. A cursor out
of order is refused, so a receipt always covers pages 1..n of one revision.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert

from paperclip.engine.context.snapshot import (
    SnapshotBindingError,
    SnapshotEntry,
    cursor,
    parse_cursor,
    run_snapshot,
    snapshot_entries,
    split_pages,
    state_revision,
)
from paperclip.engine.tools.base import ToolContext, ToolOutcome, error
from paperclip.models import Comment, WakeCommentRead, WakeCommentSnapshot
from paperclip.revisions import source_text

CURSOR_INVALID = "wake_comments_cursor_invalid"
CURSOR_OUT_OF_ORDER = "wake_comments_cursor_out_of_order"
SNAPSHOT_CHANGED = "wake_comments_snapshot_changed"


async def read_current_wake_comments(ctx: ToolContext) -> ToolOutcome:
    run, session = await ctx.run(), ctx.session
    try:
        found = await run_snapshot(session, run)
    except SnapshotBindingError as exc:
        return error(exc.code, str(exc))
    if found is None:
        return ToolOutcome(_page(None, 1, 1, 0, [], None))
    snapshot = found.snapshot
    entries = await snapshot_entries(session, snapshot.id, lengths=True)
    revision = state_revision(entries)
    pages = split_pages(entries)

    wanted = 1
    given = ctx.arguments.get("cursor")
    if given is not None:
        parsed = parse_cursor(given)
        if parsed is None:
            return error(
                CURSOR_INVALID,
                "this is not a cursor of read_current_wake_comments; call it without a cursor "
                "for the first page, then pass each page's next_cursor",
            )
        wanted, cursor_revision = parsed
        if cursor_revision != revision:
            return error(
                SNAPSHOT_CHANGED,
                "the current wake comments changed since this cursor was given; read them "
                "again from the first page (call without a cursor)",
                restart=True,
            )
    done = await _pages_read(ctx, snapshot, revision)
    if wanted not in (done, done + 1) or wanted > len(pages):
        return _out_of_order(revision, done, len(pages))

    page = pages[wanted - 1]
    next_cursor = cursor(revision, wanted + 1) if wanted < len(pages) else None
    await session.execute(
        insert(WakeCommentRead)
        .values(
            snapshot_id=snapshot.id,
            company_id=run.company_id,
            run_id=run.id,
            issue_id=run.issue_id,
            agent_id=run.agent_id,
            snapshot_revision=revision,
            page=wanted,
            complete=next_cursor is None,
            next_cursor=next_cursor,
        )
        # Reading the latest page again records nothing new: one receipt per page.
        .on_conflict_do_nothing(
            index_elements=["snapshot_id", "run_id", "snapshot_revision", "page"]
        )
    )
    comments = await _comments(ctx, page)
    return ToolOutcome(_page(revision, wanted, len(pages), len(entries), comments, next_cursor))


async def _pages_read(ctx: ToolContext, snapshot: WakeCommentSnapshot, revision: str) -> int:
    """How many pages of this revision the run has read (they are read in order)."""
    done = await ctx.session.scalar(
        select(func.max(WakeCommentRead.page)).where(
            WakeCommentRead.snapshot_id == snapshot.id,
            WakeCommentRead.snapshot_revision == revision,
            WakeCommentRead.run_id == ctx.locked.id,
        )
    )
    return int(done or 0)


def _out_of_order(revision: str, done: int, pages: int) -> ToolOutcome:
    if done >= pages:
        return error(
            CURSOR_OUT_OF_ORDER,
            "you have read every page of the current wake comments; nothing is left to read",
            expected_cursor=None,
            complete=True,
        )
    expected = cursor(revision, done + 1) if done else None
    where = f"with the cursor {expected}" if expected else "without a cursor (the first page)"
    return error(
        CURSOR_OUT_OF_ORDER,
        f"pages are read in order; you have read {done} of {pages}: continue {where}",
        expected_cursor=expected,
        complete=False,
    )


async def _comments(ctx: ToolContext, page: list[SnapshotEntry]) -> list[dict[str, Any]]:
    if not page:
        return []
    rows = await ctx.session.execute(
        select(Comment).where(Comment.id.in_([e.comment_id for e in page]))
    )
    by_id = {c.id: c for c in rows.scalars()}
    return [_comment(e.position, by_id[e.comment_id]) for e in page]


def _comment(position: int, comment: Comment) -> dict[str, Any]:
    by_agent = comment.author_agent_id is not None
    return {
        "id": str(comment.id),
        "position": position,
        "author": (
            {"agent_id": str(comment.author_agent_id)}
            if by_agent
            else {"user_id": comment.author_user_id}
        ),
        # As in the prompt: another agent's words inform, they do not direct.
        "trust": "untrusted" if by_agent else "trusted",
        "body": source_text(comment.body),
        "revision": comment.revision,
        "created_at": comment.created_at.isoformat(),
        "edited": comment.edited_at is not None,
        "deleted": comment.deleted_at is not None,
        "attachments": [],  # comments carry no attachments yet
    }


def _page(
    revision: str | None,
    page: int,
    pages: int,
    total: int,
    comments: list[dict[str, Any]],
    next_cursor: str | None,
) -> dict[str, Any]:
    return {
        "snapshot_revision": revision,
        "page": page,
        "pages": pages,
        "total_comments": total,
        "comments": comments,
        "next_cursor": next_cursor,
        "complete": next_cursor is None,
    }
