"""Completion references.

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
    SourceBlock,
    SourceKind,
)

from paperclip.revisions import revision_matches


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
