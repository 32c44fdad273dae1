"""Normalizing the sources a prompt is built from.

Renderers and plugins receive sources already normalized here: text sanitized
and trimmed, current comments deduplicated and windowed, earlier comments kept
apart from current ones. Normalizing twice changes nothing.
"""

from __future__ import annotations

from dataclasses import replace

from paperclip_hookspecs.prompts import (
    CommentSource,
    RenderLimits,
    TaskSource,
    WakeSource,
)

from paperclip.revisions import source_text


def normalize_task(task: TaskSource) -> TaskSource:
    """The task with its text fields sanitized and trimmed; empty criteria dropped."""
    criteria = tuple(c for c in (source_text(c) for c in task.acceptance_criteria) if c)
    return replace(
        task,
        title=source_text(task.title),
        description=source_text(task.description),
        acceptance_criteria=criteria,
    )


def normalize_comment(comment: CommentSource) -> CommentSource:
    """The comment with its body sanitized and trimmed; a deleted comment keeps no body."""
    return replace(comment, body="" if comment.deleted else source_text(comment.body))


def normalize_wake(wake: WakeSource, task: TaskSource, limits: RenderLimits) -> WakeSource:
    """Current comments of ``task``: one entry per id, oldest first, the newest window.

    A comment listed twice (coalesced wakes) keeps its first position and its
    last content, which is the newest edit. Comments of another issue are not
    part of this wake. Comments past the window are counted as omitted.
    """
    positions: dict[str, int] = {}
    entries: list[CommentSource] = []
    for comment in wake.comments:
        if comment.issue_id != task.id:
            continue
        normalized = normalize_comment(comment)
        at = positions.get(comment.id)
        if at is None:
            positions[comment.id] = len(entries)
            entries.append(normalized)
        else:
            entries[at] = normalized
    overflow = max(0, len(entries) - limits.max_inline_comments)
    return WakeSource(
        reason=wake.reason.strip(),
        comments=tuple(entries[overflow:]),
        omitted_count=wake.omitted_count + overflow,
    )


def current_comments(wake: WakeSource) -> tuple[CommentSource, ...]:
    """The comments a prompt renders and owns: those of the wake that were not deleted."""
    return tuple(c for c in wake.comments if not c.deleted)


def normalize_history(
    history: tuple[CommentSource, ...], wake: WakeSource, task: TaskSource, limits: RenderLimits
) -> tuple[tuple[CommentSource, ...], int]:
    """Earlier comments of ``task`` that are not part of the wake: the newest window and
    how many were left out. Deleted comments are not history."""
    current_ids = {c.id for c in wake.comments}
    seen: set[str] = set()
    kept: list[CommentSource] = []
    for comment in reversed(history):
        if comment.deleted or comment.issue_id != task.id:
            continue
        if comment.id in current_ids or comment.id in seen:
            continue
        seen.add(comment.id)
        kept.append(normalize_comment(comment))
    kept.reverse()
    overflow = max(0, len(kept) - limits.max_history_comments)
    return tuple(kept[overflow:]), overflow
