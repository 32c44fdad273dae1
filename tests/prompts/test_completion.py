"""Completion references (``paperclip_validate_completion_references``) and completion-only
recovery (``paperclip_render_completion_recovery``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import (
    CompletionReference,
    Lane,
    ReferenceCheck,
    RenderLimits,
    SessionAttempt,
    SourceBlock,
    SourceKind,
    WakeSource,
)

from paperclip.prompts import (
    AssemblyRequest,
    assemble_execution_input,
    recover_completion_only,
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


def test_paperclip_render_completion_recovery_restores_criteria_and_drops_source_references(
    hooks: Any,
) -> None:
    before = assembled()
    long_criterion = "Every redirect keeps its query string " + "and fragment " * 2_000
    current = make_task(acceptance_criteria=("Users return to the page", long_criterion))
    after = recover_completion_only(before, current, hooks).execution_input

    assert after.recovery == "completion_only"
    assert "## Paperclip completion recovery" in after.model.prompt
    assert long_criterion.strip() in after.model.prompt  # complete, never cut
    assert after.completion_sources == (SourceBlock(T, ISSUE, None, "completion_recovery"),)
    check = validate_completion(
        after,
        (
            CompletionReference(T, ISSUE),
            CompletionReference(D, ISSUE, DESCRIPTION_REV),
            CompletionReference(C, "c-2", COMMENT_REV),
        ),
        BUILTIN,
    )
    assert check.accepted == (CompletionReference(T, ISSUE),)
    assert {r.reason for r in check.refused} == {"not_rendered"}
    # Source comments and ownership evidence are kept, not discarded.
    assert after.wake == before.wake and after.turn_context == before.turn_context


def test_paperclip_render_completion_recovery_an_installed_plugin_overrides_the_builtin(
    hooks: Any, paperclip_register_plugin: Any
) -> None:
    from paperclip_hookspecs.prompts import RenderedSection, TaskSource

    class Recovery:
        @hookimpl
        def paperclip_render_completion_recovery(self, task: TaskSource) -> RenderedSection:
            return RenderedSection("completion_recovery", f"Finish {task.identifier}.")

    paperclip_register_plugin(Recovery())
    assert hooks.render_completion_recovery(TASK).text == "Finish PAP-12."


def test_paperclip_validate_completion_references_an_installed_plugin_overrides_the_builtin(
    hooks: Any, paperclip_register_plugin: Any
) -> None:
    class TrustTheTask:
        @hookimpl
        def paperclip_validate_completion_references(
            self, references: tuple[CompletionReference, ...], rendered: tuple[SourceBlock, ...]
        ) -> ReferenceCheck:
            return ReferenceCheck(accepted=tuple(r for r in references if r.kind is T))

    paperclip_register_plugin(TrustTheTask())
    check = hooks.validate_completion_references((CompletionReference(T, "any"),), ())
    assert check.ok
