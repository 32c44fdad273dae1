"""Continuation of a resumed session: the resume delta and the current objective.

The builder selects the objective and records where it came from
(``objectiveSource``). The renderer shows the selected messages, tells the wake
prompt which current comments it already shows, and refers to the objective's
source instead of repeating it when that source is displayed and unchanged.
"""

from __future__ import annotations

from paperclip_hookspecs.prompts import (
    CommentSource,
    CommentTrust,
    Continuation,
    ContinuationMessage,
    ContinuationOptions,
    ObjectiveSource,
    RenderedContinuation,
    RenderedSection,
    SourceBlock,
    SourceKind,
    TaskSource,
)

from paperclip.prompts.labels import author_label, trust_label
from paperclip.prompts.markdown import fence, join_blocks, truncate
from paperclip.prompts.sources import normalize_task
from paperclip.revisions import revision, short_revision, source_text

SECTION = "continuation"


def build_continuation(
    task: TaskSource,
    messages: tuple[ContinuationMessage, ...],
    comments: tuple[CommentSource, ...] = (),
) -> Continuation:
    """A continuation of ``task`` over the resume-delta ``messages``.

    The objective is the latest trusted current comment, else the latest trusted
    message of the delta, else the description, else the title.
    """
    task = normalize_task(task)
    objective, source = _select_objective(task, messages, comments)
    return Continuation(task.id, messages, objective, source)


def _select_objective(
    task: TaskSource,
    messages: tuple[ContinuationMessage, ...],
    comments: tuple[CommentSource, ...],
) -> tuple[str, ObjectiveSource]:
    for comment in reversed(comments):
        text = source_text(comment.body)
        if comment.trust is CommentTrust.TRUSTED and not comment.deleted and text:
            return text, ObjectiveSource("comment", comment.id, revision(text))
    for message in reversed(messages):
        text = source_text(message.body)
        trusted = message.trust is CommentTrust.TRUSTED
        if trusted and not message.deleted and message.issue_id == task.id and text:
            return text, ObjectiveSource("comment", message.id, revision(text))
    if task.description:
        return task.description, ObjectiveSource("description", task.id, revision(task.description))
    return task.title, ObjectiveSource("title", task.id, revision(task.title))


def render_continuation(
    continuation: Continuation,
    task: TaskSource,
    comments: tuple[CommentSource, ...],
    options: ContinuationOptions | None = None,
) -> RenderedContinuation:
    """Render ``continuation`` for ``task`` whose current comments are ``comments``."""
    options = options or ContinuationOptions()
    task = normalize_task(task)
    same_issue = continuation.issue_id == task.id
    current = {c.id: c for c in comments if not c.deleted and c.issue_id == task.id}
    # Only the messages actually rendered count: the newest window of the selection.
    limit = options.limits.max_continuation_messages
    # An id repeated in the delta is one message: its newest occurrence stands, so
    # a current comment cannot be rendered (and owned) twice.
    newest = {message.id: index for index, message in enumerate(continuation.messages)}
    messages = tuple(m for i, m in enumerate(continuation.messages) if newest[m.id] == i)
    selection = messages[-limit:] if limit else ()
    left_out = len(messages) - len(selection)

    blocks = [
        "## Paperclip continuation",
        f"You are continuing {task.identifier or task.id} after your previous turn. "
        + (
            "Messages of the thread since then, oldest first:"
            if messages
            else "The thread has no new messages since then."
        ),
    ]
    if left_out:
        blocks.append(f"({left_out:,} older messages of the delta are not shown.)")
    suppressed: set[str] = set()
    sources: list[SourceBlock] = []
    shown_revisions: dict[str, str] = {}
    for message in selection:
        heading = f"### Message {message.id}"
        if message.deleted:
            blocks.append(f"{heading}\nDeleted; it is no longer part of the task.")
            continue
        text = source_text(message.body)
        shown, cut = truncate(text, options.limits.max_comment_chars)
        who = author_label(message.author) if message.author else "an unknown author"
        by = f"From {who}, {trust_label(message.trust)}.\n"
        note = "\n[Message cut here; read it in full through the Paperclip tools.]" if cut else ""
        blocks.append(f"{heading}\n{by}{fence(shown)}{note}")
        if same_issue and message.issue_id == task.id:
            shown_revisions[message.id] = revision(text)
        match = current.get(message.id)
        if same_issue and message.issue_id == task.id and match and source_text(match.body) == text:
            suppressed.add(message.id)
            sources.append(
                SourceBlock(SourceKind.COMMENT, message.id, revision(text), SECTION, cut)
            )

    referenced = _objective_is_displayed(continuation, task, current, shown_revisions, options)
    source = continuation.objective_source
    if referenced and source is not None:
        where = "comment " + source.id if source.kind == "comment" else f"the task {source.kind}"
        blocks.append(
            f"### Objective\nContinue with {where} shown above "
            f"(revision {short_revision(source.revision)})."
        )
    else:
        objective, cut = truncate(
            source_text(continuation.objective), options.limits.max_comment_chars
        )
        blocks.append(
            "### Objective\nAs recorded for this continuation; newer comments below take "
            f"precedence.\n{fence(objective)}"
        )
    return RenderedContinuation(
        section=RenderedSection(SECTION, join_blocks(blocks), tuple(sources)),
        suppressed_comment_ids=frozenset(suppressed),
        objective_referenced=referenced,
    )


def _objective_is_displayed(
    continuation: Continuation,
    task: TaskSource,
    current: dict[str, CommentSource],
    shown_revisions: dict[str, str],
    options: ContinuationOptions,
) -> bool:
    """Whether the objective's recorded source is displayed, unchanged, in this prompt.

    No: for older envelopes (no source recorded), an unknown or stale revision, a
    truncated brief, or a source absent from the selected resume delta.
    """
    source = continuation.objective_source
    if source is None or options.brief_truncated or continuation.issue_id != task.id:
        return False
    if source.kind == "comment":
        shown = shown_revisions.get(source.id)
        now = current.get(source.id)
        stale = now is not None and revision(now.body) != source.revision
        return shown == source.revision and not stale
    if source.id != task.id:
        return False
    if source.kind == "description":
        return options.description_displayed and revision(task.description) == source.revision
    return options.task_displayed and revision(task.title) == source.revision
