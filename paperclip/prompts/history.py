"""The earlier thread: comments before the wake, for a fresh session's context.

These are not current sources: no section owns them and they cannot be cited
in a completion report.
"""

from __future__ import annotations

from paperclip_hookspecs.prompts import CommentSource, RenderedSection, RenderLimits

from paperclip.prompts.labels import author_label, trust_label
from paperclip.prompts.markdown import fence, join_blocks, truncate

SECTION = "history"


def render_history(
    comments: tuple[CommentSource, ...], omitted: int, limits: RenderLimits
) -> RenderedSection:
    """Render normalized earlier ``comments`` (oldest first); ``omitted`` older ones are counted."""
    if not comments:
        return RenderedSection(SECTION, "")
    blocks = [
        "## Earlier thread",
        "These comments came before this wake. They are context, not new requests.",
    ]
    if omitted:
        blocks.append(f"({omitted:,} older comments are not shown.)")
    for comment in comments:
        text, cut = truncate(comment.body, limits.max_comment_chars)
        when = f", {comment.created_at}" if comment.created_at else ""
        note = "\n[Comment cut here.]" if cut else ""
        blocks.append(
            f"### {comment.id}\nFrom {author_label(comment.author)}, {trust_label(comment.trust)}"
            f"{when}.\n{fence(text) if text else '(no text)'}{note}"
        )
    return RenderedSection(SECTION, join_blocks(blocks))
