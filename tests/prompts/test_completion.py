"""Completion references (``paperclip_validate_completion_references``), and the deprecated
completion-only recovery hook (``paperclip_render_completion_recovery``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import (
    CompletionReference,
    Lane,
    RenderLimits,
    SessionAttempt,
    SourceKind,
    WakeSource,
)

from paperclip.prompts import (
    AssemblyRequest,
    assemble_execution_input,
    validate_completion,
)
from paperclip.revisions import revision
from tests.prompts.support import BUILTIN

from .support import ISSUE, make_comment, make_task

TASK = make_task()
SHOWN = make_comment("c-2", "Keep the query string.")
WAKE = WakeSource(
    "comment",
    (
        make_comment("c-0", "Omitted by the window."),
        make_comment("c-1", "Deleted since.", deleted=True),
        SHOWN,
    ),
)
LIMITS = RenderLimits(max_inline_comments=2)
HISTORY = (make_comment("c-h", "An earlier note."),)


def assembled(**changes: Any) -> Any:
    request = AssemblyRequest(
        TASK, WAKE, Lane.NATIVE, SessionAttempt.FRESH, history=HISTORY, limits=LIMITS
    )
    return assemble_execution_input(replace(request, **changes), BUILTIN).execution_input


D, C, T = SourceKind.DESCRIPTION, SourceKind.COMMENT, SourceKind.TASK
DESCRIPTION_REV = revision(TASK.description)
COMMENT_REV = revision(SHOWN.body)

COMPLETION_REFERENCE_RULES = [
    ("the task is valid once its brief was rendered", CompletionReference(T, ISSUE), None),
    ("the rendered description at its revision", CompletionReference(D, ISSUE, DESCRIPTION_REV), None),
    ("the displayed revision prefix is enough", CompletionReference(D, ISSUE, DESCRIPTION_REV[:12]), None),
    ("a rendered current comment at its revision", CompletionReference(C, "c-2", COMMENT_REV), None),
    ("a stale revision is refused", CompletionReference(C, "c-2", revision("old")), "stale_revision"),
    ("a prefix shorter than displayed is refused",
     CompletionReference(C, "c-2", COMMENT_REV[:6]), "stale_revision"),
    ("a source needs its revision", CompletionReference(C, "c-2"), "missing_revision"),
    ("a comment left out by the window was not rendered",
     CompletionReference(C, "c-0", revision("Omitted by the window.")), "not_rendered"),
    ("a deleted comment was not rendered",
     CompletionReference(C, "c-1", revision("Deleted since.")), "not_rendered"),
    ("an earlier-thread comment is context, not a source",
     CompletionReference(C, "c-h", revision("An earlier note.")), "not_rendered"),
    ("another task was not rendered", CompletionReference(T, "issue-9"), "not_rendered"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("reference", "refusal"),
    [r[1:] for r in COMPLETION_REFERENCE_RULES],
    ids=[r[0] for r in COMPLETION_REFERENCE_RULES],
)
def test_paperclip_validate_completion_references_completion_reference_rules(
    reference: CompletionReference, refusal: str | None, hooks: Any
) -> None:
    check = validate_completion(assembled(), (reference,), hooks)
    if refusal is None:
        assert check.accepted == (reference,) and check.ok
    else:
        assert [r.reason for r in check.refused] == [refusal]


def test_paperclip_validate_completion_references_never_infers_ownership_from_text() -> None:
    # The template shows the comment body only inside the wake JSON: text, not a source block.
    value = assembled(custom_template="Do this:\n{{ wakeJson }}")
    assert "Keep the query string." in value.model.prompt
    check = validate_completion(value, (CompletionReference(C, "c-2", COMMENT_REV),), BUILTIN)
    assert [r.reason for r in check.refused] == ["not_rendered"]


def test_paperclip_validate_completion_references_legacy_inputs_only_cite_the_task() -> None:
    value = assembled(ownership=False)
    assert "Keep the query string." in value.model.prompt
    check = validate_completion(
        value, (CompletionReference(T, ISSUE), CompletionReference(C, "c-2", COMMENT_REV)), BUILTIN
    )
    assert check.accepted == (CompletionReference(T, ISSUE),)
    assert [r.reason for r in check.refused] == ["not_rendered"]


def test_paperclip_render_completion_recovery_is_deprecated_and_not_implemented_by_the_core(
    paperclip_register_plugin: Any,
) -> None:
    """The core has no completion-only recovery: the built-in rendering leaves the hook
    out, and a plugin that still implements it is told so when it is registered."""
    from paperclip_hookspecs.prompts import RenderedSection, TaskSource

    from paperclip.plugin_host.builtin import prompts as plugin

    assert not hasattr(plugin, "paperclip_render_completion_recovery")

    class Recovery:
        @hookimpl
        def paperclip_render_completion_recovery(self, task: TaskSource) -> RenderedSection:
            return RenderedSection("completion_recovery", f"Finish {task.identifier}.")

    with pytest.warns(DeprecationWarning, match="never called"):
        paperclip_register_plugin(Recovery())
