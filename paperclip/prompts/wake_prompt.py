"""The structured wake prompt: why the agent woke and the current comments.

The wake prompt owns the current comment bodies when a turn context says so.
Each comment shows its author, trust, time, edit mark, attachments and
revision; comments are listed oldest first; omissions are stated, never silent.
"""

from __future__ import annotations

from paperclip_hookspecs.prompts import (
    Attachment,
    CommentSource,
    RenderedSection,
    SourceBlock,
    SourceKind,
    TaskSource,
    WakePromptOptions,
    WakeSource,
)

from paperclip.prompts.labels import author_label, trust_label
from paperclip.prompts.markdown import count, fence, join_blocks, quote, truncate
from paperclip.prompts.rules import WAKE_RULES
from paperclip.revisions import revision, short_revision

SECTION = "wake_prompt"


def render_wake_prompt(
    wake: WakeSource, task: TaskSource, options: WakePromptOptions | None = None
) -> RenderedSection:
    """Render ``wake`` (already normalized) for ``task``."""
    options = options or WakePromptOptions()
    issue = task.identifier or task.id
    blocks: list[str] = []
    if options.resumed:
        blocks.append("## Paperclip resume delta")
        blocks.append(
            f"You are resuming your session on {issue}. The comments below are new since "
            "your last turn; continue the task with them."
        )
    else:
        blocks.append("## Paperclip wake")
        if options.rules:
            blocks.append(
                f"This wake is the most important change for this turn. It is scoped to {issue}: "
                "handle it before turning to anything else."
            )
    blocks.append(_facts(wake, task))
    if options.rules:
        blocks.append(WAKE_RULES)

    sources: list[SourceBlock] = []
    total = len(wake.comments)
    for position, comment in enumerate(wake.comments, 1):
        heading = f"### Comment {position} of {total}: {comment.id}"
        if comment.deleted:
            blocks.append(f"{heading}\nDeleted after this wake; it is no longer part of the task.")
            continue
        rev = revision(comment.body)
        parts = [heading, f"{_byline(comment)} Revision {short_revision(rev)}."]
        if comment.id in options.suppressed_comment_ids:
            # The body is in the continuation; the event keeps its author, trust and files.
            parts.append("Its text is shown unchanged in the continuation above.")
        else:
            text, cut = truncate(comment.body, options.limits.max_comment_chars)
            body = fence(text) if text else "(no text)"
            if cut:
                body += (
                    f"\n[Comment cut at {options.limits.max_comment_chars:,} characters; "
                    "read it in full with read_current_wake_comments.]"
                )
            parts.append(body)
            sources.append(SourceBlock(SourceKind.COMMENT, comment.id, rev, SECTION, cut))
        if comment.attachments:
            parts.append(_attachments(comment.attachments))
        blocks.append("\n".join(parts))
    return RenderedSection(SECTION, join_blocks(blocks), tuple(sources))


def _facts(wake: WakeSource, task: TaskSource) -> str:
    status = f" (status {task.status})" if task.status else ""
    lines = [
        f"- Reason: {wake.reason or 'unknown'}",
        f"- Issue: {task.identifier or task.id} {quote(task.title)}{status}",
    ]
    shown = [c for c in wake.comments if not c.deleted]
    deleted = len(wake.comments) - len(shown)
    if shown:
        gone = f" ({deleted:,} more deleted)" if deleted else ""
        lines.append(
            f"- Comments: {count(len(shown), 'comment')} below{gone}, oldest first; "
            f"latest {shown[-1].id}"
        )
    elif deleted:
        lines.append(f"- Comments: {deleted:,} deleted, none current; continue from the task.")
    else:
        lines.append("- Comments: none in this wake; continue from the task.")
    if wake.reason == "heartbeat":
        lines.append(
            "- Heartbeat: nobody asked for anything new. This is your periodic wake to look at "
            "your open assigned issues (listed in the task above): move the most urgent one "
            "forward, or finish at once if none needs you now."
        )
    if wake.omitted_count:
        lines.append(
            f"- Omitted: {count(wake.omitted_count, 'earlier comment')} of this wake "
            "not shown; read them all with read_current_wake_comments before you finish."
        )
    return "\n".join(lines)


def _byline(comment: CommentSource) -> str:
    when = f", posted {comment.created_at}" if comment.created_at else ""
    edited = ", edited" if comment.edited else ""
    return f"From {author_label(comment.author)}, {trust_label(comment.trust)}{when}{edited}."


def _attachments(attachments: tuple[Attachment, ...]) -> str:
    lines = ["Attachments:"]
    for attachment in attachments:
        details = [d for d in (attachment.content_type,) if d]
        if attachment.size_bytes is not None:
            details.append(f"{attachment.size_bytes:,} bytes")
        described = f" ({', '.join(details)})" if details else ""
        lines.append(f"- {quote(attachment.name)}{described}, id {attachment.id}")
    return "\n".join(lines)
