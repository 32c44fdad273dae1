"""Continuation rendering (``paperclip_render_continuation``) and ``objectiveSource``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import (
    CommentSource,
    CommentTrust,
    Continuation,
    ContinuationMessage,
    ContinuationOptions,
    Lane,
    ObjectiveSource,
    RenderedContinuation,
    RenderedSection,
    RenderLimits,
    SessionAttempt,
    TaskSource,
    WakeSource,
)

from paperclip.prompts import AssemblyRequest, assemble_execution_input, build_continuation
from paperclip.revisions import revision
from tests.prompts.support import BUILTIN

from .support import ADA, ISSUE, make_comment, make_task

TASK = make_task()
CURRENT = make_comment("c-5", "Also keep the query string.")


def message(comment_id: str, body: str, **changes: Any) -> ContinuationMessage:
    base = ContinuationMessage(comment_id, ISSUE, body, ADA, CommentTrust.TRUSTED)
    return replace(base, **changes)


@dataclass(frozen=True)
class Suppression:
    rule: str
    messages: tuple[ContinuationMessage, ...]
    suppressed: bool
    issue_id: str = ISSUE
    current: CommentSource = CURRENT
    limits: RenderLimits = field(default_factory=RenderLimits)


SUPPRESSION_RULES = [
    Suppression("same issue, id in the rendered selection, same body: suppressed",
                (message("c-5", "Also keep the query string."),), True),
    Suppression("the body matches once trimmed: suppressed",
                (message("c-5", "\n  Also keep the query string.  \n"),), True),
    Suppression("an edited body stays visible",
                (message("c-5", "Also keep the hash."),), False),
    Suppression("a message missing from the resume delta stays visible",
                (message("c-4", "Earlier message."),), False),
    Suppression("a message outside the rendered selection stays visible",
                (message("c-5", "Also keep the query string."), message("c-6", "Newer.")), False,
                limits=RenderLimits(max_continuation_messages=1)),
    Suppression("a deleted message stays visible",
                (message("c-5", "Also keep the query string.", deleted=True),), False),
    Suppression("a continuation for an unrelated issue stays visible",
                (message("c-5", "Also keep the query string.", issue_id="issue-9"),), False,
                issue_id="issue-9"),
    Suppression("a message of another issue stays visible",
                (message("c-5", "Also keep the query string.", issue_id="issue-9"),), False),
    Suppression("a distinct id with an equal body stays visible",
                (message("c-6", "Also keep the query string."),), False),
    Suppression("a comment deleted since the wake is not current: nothing to suppress",
                (message("c-5", "Also keep the query string."),), False,
                current=replace(CURRENT, deleted=True)),
]  # fmt: skip


@pytest.mark.parametrize("case", SUPPRESSION_RULES, ids=[c.rule for c in SUPPRESSION_RULES])
def test_paperclip_render_continuation_continuation_rendering_rules(
    case: Suppression, hooks: Any
) -> None:
    continuation = Continuation(case.issue_id, case.messages, "Keep going.")
    rendered = hooks.render_continuation(
        continuation, TASK, (case.current,), ContinuationOptions(limits=case.limits)
    )
    assert (CURRENT.id in rendered.suppressed_comment_ids) is case.suppressed
    assert [b.id for b in rendered.section.sources] == (["c-5"] if case.suppressed else [])


def test_paperclip_render_continuation_suppressed_comment_is_rendered_once_end_to_end() -> None:
    wake = WakeSource("comment", (make_comment("c-4", "Start."), CURRENT))
    delta = (message("c-4", "Start, edited."), message("c-5", "Also keep the query string."))
    result = assemble_execution_input(
        AssemblyRequest(TASK, wake, Lane.NATIVE, SessionAttempt.RESUMED, resume_delta=delta),
        BUILTIN,
    )
    assert result.prompt.count("Also keep the query string.") == 1
    assert "Its text is shown unchanged in the continuation above" in result.prompt
    assert "Start.\n" in result.prompt  # the edited comment stays visible in the wake prompt
    owners = {b.id: b.section for b in result.execution_input.model.rendered_sources}
    assert owners == {ISSUE: "task_markdown", "c-4": "wake_prompt", "c-5": "continuation"}


COMMENT_SOURCE = ObjectiveSource("comment", "c-5", revision(CURRENT.body))
DESCRIPTION_SOURCE = ObjectiveSource("description", ISSUE, revision(TASK.description))
TITLE_SOURCE = ObjectiveSource("title", ISSUE, revision(TASK.title))
SHOWN = ContinuationOptions(description_displayed=True, task_displayed=True)
IN_DELTA = (message("c-5", CURRENT.body),)

OBJECTIVE_RULES = [
    ("a displayed comment source is referred to", COMMENT_SOURCE, IN_DELTA, TASK, SHOWN, True),
    ("an older envelope keeps the full objective", None, IN_DELTA, TASK, SHOWN, False),
    ("an unknown revision keeps the full objective",
     replace(COMMENT_SOURCE, revision="0" * 64), IN_DELTA, TASK, SHOWN, False),
    ("a stale revision keeps the full objective",
     COMMENT_SOURCE, (message("c-5", "Edited since."),), TASK, SHOWN, False),
    ("a truncated brief keeps the full objective", COMMENT_SOURCE, IN_DELTA, TASK,
     replace(SHOWN, brief_truncated=True), False),
    ("a source absent from the resume delta keeps the full objective",
     COMMENT_SOURCE, (message("c-4", "Other."),), TASK, SHOWN, False),
    ("a displayed description is referred to", DESCRIPTION_SOURCE, (), TASK, SHOWN, True),
    ("a description the compact brief does not show keeps the full objective",
     DESCRIPTION_SOURCE, (), TASK, replace(SHOWN, description_displayed=False), False),
    ("a changed description keeps the full objective",
     DESCRIPTION_SOURCE, (), replace(TASK, description="New text."), SHOWN, False),
    ("a displayed title is referred to", TITLE_SOURCE, (), TASK, SHOWN, True),
    ("a changed title keeps the full objective",
     TITLE_SOURCE, (), replace(TASK, title="Renamed"), SHOWN, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("source", "messages", "task", "options", "referenced"),
    [r[1:] for r in OBJECTIVE_RULES],
    ids=[r[0] for r in OBJECTIVE_RULES],
)
def test_paperclip_render_continuation_objective_source_rules(
    source: ObjectiveSource | None,
    messages: tuple[ContinuationMessage, ...],
    task: TaskSource,
    options: ContinuationOptions,
    referenced: bool,
    hooks: Any,
) -> None:
    objective = "Return users to the page they came from, keeping the query."
    continuation = Continuation(ISSUE, messages, objective, source)
    rendered = hooks.render_continuation(continuation, task, (CURRENT,), options)
    assert rendered.objective_referenced is referenced
    assert (objective in rendered.section.text) is not referenced


OBJECTIVE_SELECTION = [
    ("the latest trusted current comment", (make_comment("c-1", "A"), CURRENT), (),
     TASK, ObjectiveSource("comment", "c-5", revision(CURRENT.body))),
    ("an untrusted comment is never the objective",
     (replace(CURRENT, trust=CommentTrust.UNTRUSTED),), (message("c-2", "From the delta"),),
     TASK, ObjectiveSource("comment", "c-2", revision("From the delta"))),
    ("else the description, hashed trimmed", (), (), replace(TASK, description="  D  "),
     ObjectiveSource("description", ISSUE, revision("D"))),
    ("else the title", (), (), replace(TASK, description=""),
     ObjectiveSource("title", ISSUE, revision(TASK.title))),
]  # fmt: skip


@pytest.mark.parametrize(
    ("comments", "messages", "task", "expected"),
    [r[1:] for r in OBJECTIVE_SELECTION],
    ids=[r[0] for r in OBJECTIVE_SELECTION],
)
def test_build_continuation_records_the_objective_source(
    comments: tuple[CommentSource, ...],
    messages: tuple[ContinuationMessage, ...],
    task: TaskSource,
    expected: ObjectiveSource,
) -> None:
    assert build_continuation(task, messages, comments).objective_source == expected


def test_paperclip_render_continuation_an_installed_plugin_overrides_the_builtin(
    hooks: Any, paperclip_register_plugin: Any
) -> None:
    class NoContinuation:
        @hookimpl
        def paperclip_render_continuation(
            self,
            continuation: Continuation,
            task: TaskSource,
            comments: tuple[CommentSource, ...],
            options: ContinuationOptions,
        ) -> RenderedContinuation:
            return RenderedContinuation(RenderedSection("continuation", "Carry on."))

    paperclip_register_plugin(NoContinuation())
    out = hooks.render_continuation(Continuation(ISSUE, (), "x"), TASK, (), ContinuationOptions())
    assert out.section.text == "Carry on." and not out.suppressed_comment_ids


def test_paperclip_render_continuation_a_message_id_repeated_in_the_delta_is_rendered_once():
    """Regression: a delta naming one message twice rendered (and owned) its comment twice."""
    from paperclip_hookspecs.prompts import Lane, SessionAttempt, WakeSource

    from paperclip.prompts import AssemblyRequest, assemble_execution_input
    from tests.prompts.support import make_comment, make_task

    comment = make_comment("c-0", "LGTM")
    message = ContinuationMessage(
        id="c-0", issue_id=comment.issue_id, body="LGTM", author=comment.author, trust=comment.trust
    )
    result = assemble_execution_input(
        AssemblyRequest(
            task=make_task(),
            wake=WakeSource("comment", (comment,)),
            lane=Lane.NATIVE,
            attempt=SessionAttempt.RESUMED,
            resume_delta=(message, message),
        ),
        BUILTIN,
    )
    owned = [b for b in result.execution_input.model.rendered_sources if b.id == "c-0"]
    assert len(owned) == 1
