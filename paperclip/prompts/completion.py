"""Completion references and completion-only recovery.

A completion report may cite the task, the description (id and revision) and
the current comments (id and revision). A citation is valid only when that
source's block was rendered into the model's prompt: the check reads the
rendered source blocks, never the prompt text.
"""

from __future__ import annotations

from collections import defaultdict

from paperclip_hookspecs.prompts import (
    CompletionReference,
    ReferenceCheck,
    RefusedReference,
    RenderedSection,
    SourceBlock,
    SourceKind,
    TaskSource,
)

from paperclip.prompts.markdown import join_blocks
from paperclip.prompts.sources import normalize_task
from paperclip.prompts.task_markdown import DATA_NOTICE, task_header
from paperclip.revisions import revision_matches

RECOVERY_SECTION = "completion_recovery"


def validate_completion_references(
    references: tuple[CompletionReference, ...], rendered: tuple[SourceBlock, ...]
) -> ReferenceCheck:
    """Accept each reference whose source block is among ``rendered``; refuse the others."""
    blocks: dict[tuple[SourceKind, str], list[SourceBlock]] = defaultdict(list)
    for block in rendered:
        blocks[(block.kind, block.id)].append(block)
    accepted: list[CompletionReference] = []
    refused: list[RefusedReference] = []
    for ref in references:
        found = blocks.get((ref.kind, ref.id))
        if not found:
            refused.append(RefusedReference(ref, "not_rendered"))
        elif ref.kind is SourceKind.TASK:
            accepted.append(ref)
        elif not ref.revision:
            refused.append(RefusedReference(ref, "missing_revision"))
        elif any(b.revision and revision_matches(ref.revision, b.revision) for b in found):
            accepted.append(ref)
        else:
            refused.append(RefusedReference(ref, "stale_revision"))
    return ReferenceCheck(tuple(accepted), tuple(refused))


def render_completion_recovery(task: TaskSource) -> RenderedSection:
    """The prompt of a completion-only recovery: the task and its complete current criteria.

    It replaces the task prompt, so it carries the task as its only source: the
    description and comments are not rendered and can no longer be cited.
    """
    task = normalize_task(task)
    criteria = (
        "\n".join(f"{n}. {c}" for n, c in enumerate(task.acceptance_criteria, 1))
        if task.acceptance_criteria
        else "None are recorded; the task is done when its issue asks for nothing more."
    )
    text = join_blocks(
        [
            "## Paperclip completion recovery",
            f"Your work on {task.identifier or task.id} may be finished, but its completion "
            "was not recorded. Check the current state against the criteria below, then report "
            "completion through the Paperclip finish tool, or finish the work first if a "
            "criterion is not met. Do not repeat an action whose outcome you do not know; "
            "check first.",
            DATA_NOTICE,
            task_header(task),
            f"### Acceptance criteria (current)\n{criteria}",
        ]
    )
    return RenderedSection(
        RECOVERY_SECTION, text, (SourceBlock(SourceKind.TASK, task.id, None, RECOVERY_SECTION),)
    )
