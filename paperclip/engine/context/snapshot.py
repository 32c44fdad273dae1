"""The wake snapshot: the exact comments a run was woken for, and how far the run has read them.

Recorded with the run, in the transaction that creates it (the claim's, which
writes it with the run: ``wake_snapshot`` makes it): every current wake
comment (all of them, not only the window the prompt rendered), in order, with
its revision. The snapshot's *revision* is a hash over the comments' current
state (revision, edit and deletion marks), so it moves when one of them is
edited or deleted after the wake, and never moves back (an edit that restores
the old text is still an edit). When the prompt did not show every comment in
full, the run must read them all with ``read_current_wake_comments`` before its
completion report is accepted (seed 000).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from paperclip_hookspecs.prompts import SourceBlock, SourceKind
from sqlalchemy import func, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from paperclip.models import (
    Comment,
    Run,
    WakeCommentRead,
    WakeCommentSnapshot,
    WakeSnapshotComment,
)

PAGE_MAX_COMMENTS = 20
PAGE_MAX_CHARS = 100_000
"""A page holds at most this many characters of bodies (and always at least one comment):
with comment bodies capped at 100,000 characters, a page stays far below the wire's 4 MiB."""

CHAT = "chat"
CHAT_WAKE_SOURCES: frozenset[str] = frozenset({CHAT})
"""Wake sources whose read requirement is recorded as a chat request's (``read_reason`` ``chat``):
a conversation turn's wake (``snapshot_source``). As for any wake, the read is required when the
prompt did not show every comment in full: a truncated chat request must be read completely."""

CURSOR_PREFIX = "wc1"
_REVISION = re.compile("[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    """One comment of a snapshot as it is now."""

    position: int
    comment_id: uuid.UUID
    revision: str
    edited_at: datetime | None
    deleted: bool
    length: int = 0
    """Characters of its body (only when asked for: the reader pages by it)."""


@dataclass(frozen=True, slots=True)
class RunSnapshot:
    """A run's snapshot row and its newest read receipt, read by one exact query."""

    snapshot: WakeCommentSnapshot
    latest_read: WakeCommentRead | None


class SnapshotBindingError(Exception):
    """The snapshot does not belong to the run's company, task and agent: nothing is checked."""

    code = "run_binding_mismatch"


def state_revision(entries: Sequence[SnapshotEntry]) -> str:
    """The snapshot's revision over its comments' current state, in order."""
    digest = hashlib.sha256()
    for entry in entries:
        edited = entry.edited_at.isoformat() if entry.edited_at else ""
        deleted = "deleted" if entry.deleted else ""
        digest.update(f"{entry.comment_id}:{entry.revision}:{edited}:{deleted}\n".encode())
    return digest.hexdigest()


def read_reason(
    source: str, comment_ids: Sequence[str], rendered: Sequence[SourceBlock]
) -> str | None:
    """Why the run must read its wake comments through the reader; None when the prompt showed
    every one of them in full (the inline-complete case).

    Only the sources the prompt recorded as rendered count: a prompt that records
    none (execution input v4) proves nothing, so its comments must be read.
    """
    if not comment_ids:
        return None
    comments = [b for b in rendered if b.kind is SourceKind.COMMENT]
    shown = {b.id for b in comments}
    whole = {b.id for b in comments if not b.truncated}
    if any(i not in shown for i in comment_ids):
        reason = "omitted"
    elif any(i not in whole for i in comment_ids):
        reason = "truncated"
    else:
        return None
    return CHAT if source in CHAT_WAKE_SOURCES else reason


def snapshot_source(source: str, *, chat: bool) -> str:
    """The wake's source as the read rule sees it: ``chat`` for a conversation turn's wake
    (a chat message wakes the agent through its comment: ``chat`` says a conversation turn
    names the wake), else the wake's own source."""
    return CHAT if chat else source


@dataclass(frozen=True, slots=True)
class NewSnapshot:
    """A new run's wake snapshot, as the claim that creates the run writes it."""

    id: uuid.UUID
    revision: str
    read_reason: str | None
    entries: list[SnapshotEntry]

    @property
    def read_required(self) -> bool:
        return self.read_reason is not None


def wake_snapshot(
    source: str, comments: Sequence[Any], rendered: Sequence[SourceBlock]
) -> NewSnapshot:
    """The wake snapshot of a new run of a task (written in the transaction that creates it).

    ``comments`` are the run's current wake comments, all of them, oldest
    first (each with ``id``, ``revision``, ``edited_at``, ``deleted_at``);
    ``rendered`` the sources its prompt rendered. A run without a task has no
    snapshot.
    """
    entries = [
        SnapshotEntry(n, c.id, c.revision, c.edited_at, c.deleted_at is not None)
        for n, c in enumerate(comments, 1)
    ]
    reason = read_reason(source, [str(c.id) for c in comments], rendered)
    return NewSnapshot(uuid.uuid4(), state_revision(entries), reason, entries)


async def run_snapshot(session: AsyncSession, run: Run) -> RunSnapshot | None:
    """The run's snapshot and its newest read receipt (one query), the snapshot's binding checked.

    None when the run has no snapshot (no task, or created before snapshots
    were recorded). Raises :class:`SnapshotBindingError` when the snapshot
    names another company, task or agent than the run.
    """
    if run.issue_id is None:
        return None
    # The run's own newest receipt; another binding's only when the run has none (to refuse it).
    newest = (
        select(WakeCommentRead)
        .where(WakeCommentRead.snapshot_id == WakeCommentSnapshot.id)
        .order_by((WakeCommentRead.run_id == run.id).desc(), WakeCommentRead.id.desc())
        .limit(1)
        .lateral("newest_read")
    )
    read = aliased(WakeCommentRead, newest)
    row = (
        await session.execute(
            select(WakeCommentSnapshot, read)
            .outerjoin(read, true())
            .where(WakeCommentSnapshot.run_id == run.id)
        )
    ).one_or_none()
    if row is None:
        return None
    snapshot, latest = row
    if (snapshot.company_id, snapshot.issue_id, snapshot.agent_id) != (
        run.company_id,
        run.issue_id,
        run.agent_id,
    ):
        raise SnapshotBindingError(
            f"the wake snapshot of run {run.id} names another company, task or agent"
        )
    return RunSnapshot(snapshot, latest)


async def snapshot_entries(
    session: AsyncSession, snapshot_id: uuid.UUID, *, lengths: bool = False
) -> list[SnapshotEntry]:
    """The snapshot's comments as they are now, in order: only its own rows, never the thread.

    With ``lengths`` the bodies' lengths too (the reader pages by them); the
    completion check leaves the bodies alone.
    """
    columns = [
        WakeSnapshotComment.position,
        WakeSnapshotComment.comment_id,
        Comment.revision,
        Comment.edited_at,
        Comment.deleted_at,
    ]
    if lengths:
        columns.append(func.char_length(Comment.body))
    rows = await session.execute(
        select(*columns)
        .join(Comment, Comment.id == WakeSnapshotComment.comment_id)
        .where(WakeSnapshotComment.snapshot_id == snapshot_id)
        .order_by(WakeSnapshotComment.position)
    )
    return [
        SnapshotEntry(row[0], row[1], row[2], row[3], row[4] is not None, row[5] if lengths else 0)
        for row in rows
    ]


def split_pages(entries: Sequence[SnapshotEntry]) -> list[list[SnapshotEntry]]:
    """The snapshot's pages, in order: bounded by count and by characters; always one page."""
    pages: list[list[SnapshotEntry]] = []
    page: list[SnapshotEntry] = []
    chars = 0
    for entry in entries:
        if page and (len(page) >= PAGE_MAX_COMMENTS or chars + entry.length > PAGE_MAX_CHARS):
            pages.append(page)
            page, chars = [], 0
        page.append(entry)
        chars += entry.length
    if page or not pages:
        pages.append(page)
    return pages


def cursor(snapshot_revision: str, page: int) -> str:
    """The cursor that reads ``page`` of the snapshot at ``snapshot_revision``."""
    return f"{CURSOR_PREFIX}:{page}:{snapshot_revision}"


def parse_cursor(text: str) -> tuple[int, str] | None:
    """(page, snapshot revision) of a cursor; None when it is not one of ours."""
    prefix, _, rest = text.strip().partition(":")
    page, _, revision = rest.partition(":")
    if prefix != CURSOR_PREFIX or not page.isdigit() or not _REVISION.fullmatch(revision):
        return None
    number = int(page)
    return (number, revision) if 2 <= number <= 1_000_000 else None
