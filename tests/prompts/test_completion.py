"""Completion references (``paperclip_validate_completion_references``), and the prompt of
the completion-only recovery lane, the report nudge (``paperclip_render_completion_recovery``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
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
from paperclip_hookspecs.runs import (
    RunBinding,
    RunComment,
    RunToolCall,
    RunView,
    ToolCallStatus,
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


def view(*, comments: tuple[str, ...] = (), calls: tuple[tuple[str, bool], ...] = ()) -> RunView:
    """A run's view: the comments it posted, its calls as (tool, refused)."""
    at = datetime(2026, 12, 1, tzinfo=UTC)
    return RunView(
        binding=RunBinding("run-1", "co-1", ISSUE, "agent-1"),
        comments=tuple(
            RunComment(f"m-{n}", body, revision(body), at) for n, body in enumerate(comments)
        ),
        tool_calls=tuple(
            RunToolCall(
                f"call-{n}",
                tool,
                {},
                ToolCallStatus.SETTLED,
                refused,
                {"error": {"code": "relay_down", "message": "no"}} if refused else {},
                at,
            )
            for n, (tool, refused) in enumerate(calls)
        ),
    )


def test_paperclip_render_completion_recovery_says_what_was_done_and_asks_for_the_report() -> None:
    """The built-in nudge: no report recorded, the run's comments and calls, the task as it
    is now, the ask; the task is its only source (seed 001: references removed)."""
    done = view(
        comments=("Fixed the flaky test in ci.yml.",),
        calls=(("get_task_context", False), ("post_comment", False), ("finish", True)),
    )
    section = BUILTIN.render_completion_recovery(TASK, done)

    assert "no completion report was recorded" in section.text
    assert "Fixed the flaky test in ci.yml." in section.text
    assert "get_task_context x1, post_comment x1" in section.text
    assert "the last was `finish` (relay_down)" in section.text
    assert "Completion report: none recorded" in section.text
    assert TASK.description in section.text
    assert "call the Paperclip `finish` tool" in section.text
    assert [(b.kind, b.id) for b in section.sources] == [(T, ISSUE)]


def test_paperclip_render_completion_recovery_of_a_plugin_is_the_nudge_turns_prompt(
    paperclip_plugin_host: Any, paperclip_register_plugin: Any
) -> None:
    """A plugin's answer is the prompt of the nudge turn (an implementation may take fewer
    arguments than the spec), and the turn's input cites the task alone."""
    from paperclip_hookspecs.prompts import RenderedSection, SourceBlock, TaskSource

    from paperclip.prompts import read_execution_input
    from paperclip.prompts.report_nudge import nudge_input

    class Nudge:
        @hookimpl
        def paperclip_render_completion_recovery(self, task: TaskSource) -> RenderedSection:
            return RenderedSection(
                "completion_recovery",
                f"{task.identifier}: report with finish now.",
                (
                    SourceBlock(T, task.id, None, "completion_recovery"),
                    SourceBlock(D, task.id, DESCRIPTION_REV, "completion_recovery"),
                ),
            )

    paperclip_register_plugin(Nudge())
    previous = assembled()
    turn = nudge_input(previous, TASK, view(), paperclip_plugin_host, turn=2, nudge=1)

    assert turn["prompt"] == f"{TASK.identifier}: report with finish now."
    assert (turn["reason"], turn["turn"], turn["nudge"]) == ("completion_recovery", 2, 1)
    value = read_execution_input(turn["executionInput"])
    assert value.recovery == "completion_only"
    assert [(b.kind, b.id) for b in value.completion_sources] == [(T, ISSUE)]
    assert value.model.system == previous.model.system
