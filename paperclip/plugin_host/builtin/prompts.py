"""The default prompt rendering, as a built-in plugin of the prompt-rendering hooks.

Every implementation is ``trylast``: an installed plugin implementing the same
``firstresult`` hook runs first, and when it returns a value, that value is used.
"""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import (
    CommentSource,
    CompletionReference,
    Continuation,
    ContinuationOptions,
    ReferenceCheck,
    RenderedContinuation,
    RenderedSection,
    SectionRequest,
    SectionSelection,
    SourceBlock,
    TaskMarkdownOptions,
    TaskSource,
    TurnContext,
    WakePromptOptions,
    WakeSource,
)
from paperclip_hookspecs.runs import RunView

from paperclip.prompts.completion import validate_completion_references
from paperclip.prompts.continuation import render_continuation
from paperclip.prompts.report_nudge import render_completion_recovery
from paperclip.prompts.sections import select_prompt_sections
from paperclip.prompts.task_markdown import build_task_markdown
from paperclip.prompts.turn_context import build_turn_context
from paperclip.prompts.wake_prompt import render_wake_prompt


@hookimpl(trylast=True)
def paperclip_render_task_markdown(
    task: TaskSource, options: TaskMarkdownOptions
) -> RenderedSection:
    return build_task_markdown(task, options)


@hookimpl(trylast=True)
def paperclip_render_wake_prompt(
    wake: WakeSource, task: TaskSource, options: WakePromptOptions
) -> RenderedSection:
    return render_wake_prompt(wake, task, options)


@hookimpl(trylast=True)
def paperclip_build_turn_context(task: TaskSource, wake: WakeSource) -> TurnContext:
    return build_turn_context(task, wake)


@hookimpl(trylast=True)
def paperclip_select_prompt_sections(request: SectionRequest) -> SectionSelection:
    return select_prompt_sections(request)


@hookimpl(trylast=True)
def paperclip_render_continuation(
    continuation: Continuation,
    task: TaskSource,
    comments: tuple[CommentSource, ...],
    options: ContinuationOptions,
) -> RenderedContinuation:
    return render_continuation(continuation, task, comments, options)


@hookimpl(trylast=True)
def paperclip_validate_completion_references(
    references: tuple[CompletionReference, ...], rendered: tuple[SourceBlock, ...]
) -> ReferenceCheck:
    return validate_completion_references(references, rendered)


@hookimpl(trylast=True)
def paperclip_render_completion_recovery(task: TaskSource, run: RunView) -> RenderedSection:
    return render_completion_recovery(task, run)
