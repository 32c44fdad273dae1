"""Assembling a run's execution input: the entry point of the run engine.

``assemble_execution_input`` takes plain frozen inputs and returns the
envelope to persist on the run (``paperclip.native-execution-input.v5`` with
``paperclipTurnContext``, or v4 when ownership production is off or the
session is pinned to v4) and the prompt to dispatch. ``read_execution_input``
reads a persisted v5 or v4 envelope back into the same typed value.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from paperclip_hookspecs.prompts import (
    CommentSource,
    CompletionReference,
    Continuation,
    ContinuationMessage,
    ContinuationOptions,
    Lane,
    Placement,
    ProviderCarriers,
    ReferenceCheck,
    RenderedContinuation,
    RenderedSection,
    RenderLimits,
    SectionRequest,
    SectionSelection,
    SessionAttempt,
    SourceBlock,
    SourceKind,
    TaskMarkdownMode,
    TaskMarkdownOptions,
    TaskSource,
    TurnContext,
    WakePromptOptions,
    WakeSource,
)

from paperclip.prompts.bootstrap import render_bootstrap, render_instructions
from paperclip.prompts.continuation import build_continuation
from paperclip.prompts.envelopes import (
    EXECUTION_INPUT_V4,
    EXECUTION_INPUT_V5,
    MODEL_ENVELOPE_FOR,
    ExecutionInput,
    ModelEnvelope,
    write_execution_input,
)
from paperclip.prompts.history import render_history
from paperclip.prompts.hooks import PromptHooks
from paperclip.prompts.markdown import join_blocks
from paperclip.prompts.rules import DEFAULT_RULES, WAKE_RULES
from paperclip.prompts.sources import normalize_history, normalize_task, normalize_wake
from paperclip.prompts.templates import render_template
from paperclip.prompts.wake_json import render_wake_json
from paperclip.prompts.wire import task_to_wire, turn_context_to_wire, wake_to_wire
from paperclip.revisions import revision


@dataclass(frozen=True, slots=True)
class AgentBrief:
    """What the prompt says about the agent."""

    name: str = ""
    instructions: str = ""


@dataclass(frozen=True, slots=True)
class AssemblyRequest:
    """Everything one session attempt's prompt is assembled from. Plain values, no rows."""

    task: TaskSource
    wake: WakeSource
    lane: Lane
    attempt: SessionAttempt
    run_id: str = ""
    provider: str = ""
    agent: AgentBrief = field(default_factory=AgentBrief)
    carriers: ProviderCarriers = field(default_factory=ProviderCarriers)
    history: tuple[CommentSource, ...] = ()
    """Earlier comments of the issue (fresh attempts show the newest of them)."""
    resume_delta: tuple[ContinuationMessage, ...] | None = None
    """Thread messages since the session's last turn (native resumes build a continuation)."""
    continuation: Continuation | None = None
    """A continuation to render as is (for example restored from ``previous``)."""
    custom_template: str | None = None
    previous: ExecutionInput | None = None
    """The persisted input of the same run or session; pins its schema."""
    ownership: bool = True
    """Produce ownership metadata (v5) for new sessions; off is the rollback switch."""
    limits: RenderLimits = field(default_factory=RenderLimits)


@dataclass(frozen=True, slots=True)
class AssembledInput:
    """The result: the typed input and the exact JSON to persist on the run."""

    execution_input: ExecutionInput
    envelope: dict[str, Any]

    @property
    def schema(self) -> str:
        return self.execution_input.schema

    @property
    def prompt(self) -> str:
        """The user prompt to dispatch."""
        return self.execution_input.model.prompt

    @property
    def system(self) -> str | None:
        """Text for the provider's own carrier (system extension, execution contract), if any."""
        return self.execution_input.model.system


class OwnershipError(RuntimeError):
    """A rendered prompt breaks the ownership contract (a source rendered zero or two times)."""


def assemble_execution_input(request: AssemblyRequest, hooks: PromptHooks) -> AssembledInput:
    """Assemble the execution input and prompt of one session attempt.

    Call it for the attempt that is dispatched: if a resume fails and recovery
    permits a fresh retry, call it again with ``SessionAttempt.FRESH_RETRY``.
    Raises :class:`OwnershipError` when plugins render an owned source zero or
    two times.
    """
    task = normalize_task(request.task)
    wake = normalize_wake(request.wake, task, request.limits)
    schema = _schema_for(request)
    v5 = schema == EXECUTION_INPUT_V5
    turn_context = hooks.build_turn_context(task, wake) if v5 else None
    continuation = _continuation_for(request, task, wake, v5)
    selection = hooks.select_prompt_sections(
        SectionRequest(
            lane=request.lane,
            attempt=request.attempt,
            owned=turn_context is not None,
            provider=request.provider,
            carriers=request.carriers,
            custom_template=request.custom_template is not None,
            has_continuation=continuation is not None,
        )
    )

    task_markdown = _render_task_markdown(
        hooks, request, task, wake, selection.task_markdown, selection.assignment_only
    )
    rendered_continuation = None
    if selection.continuation and continuation is not None:
        rendered_continuation = _render_continuation(
            hooks, request, task, wake, continuation, task_markdown
        )
    wake_prompt = _render_wake_prompt(hooks, request, task, wake, selection, rendered_continuation)
    payload = wake_to_wire(wake, task)

    if request.custom_template is not None:
        prompt, rendered = _render_custom_template(
            request, hooks, task, wake, selection, wake_prompt, payload, turn_context
        )
    else:
        sections = _user_sections(
            request, task, wake, selection, task_markdown, rendered_continuation, wake_prompt
        )
        if selection.wake_json:
            sections.append(render_wake_json(payload))
        prompt = join_blocks(s.text for s in sections)
        rendered = tuple(b for s in sections if s.text for b in s.sources)
        if turn_context is not None:
            check_ownership(turn_context, rendered, selection)

    value = ExecutionInput(
        schema=schema,
        run_id=request.run_id,
        lane=request.lane,
        attempt=request.attempt,
        provider=request.provider,
        task=task,
        wake=wake,
        task_markdown=task_markdown.text,
        wake_prompt=wake_prompt.text,
        selection=selection,
        model=ModelEnvelope(
            MODEL_ENVELOPE_FOR[schema], prompt, _system_text(selection), rendered if v5 else ()
        ),
        turn_context=turn_context,
        # Recorded only when rendered: a restart resumes exactly what the model saw.
        continuation=continuation if rendered_continuation is not None else None,
    )
    return AssembledInput(value, write_execution_input(value))


def _render_task_markdown(
    hooks: PromptHooks,
    request: AssemblyRequest,
    task: TaskSource,
    wake: WakeSource,
    mode: TaskMarkdownMode,
    assignment_only: bool,
) -> RenderedSection:
    return hooks.render_task_markdown(
        task,
        TaskMarkdownOptions(
            mode=mode,
            assignment_only=assignment_only,
            wake_comments=wake.comments,
            previous_description_revision=_previous_description_revision(request.previous),
            limits=request.limits,
        ),
    )


def _render_continuation(
    hooks: PromptHooks,
    request: AssemblyRequest,
    task: TaskSource,
    wake: WakeSource,
    continuation: Continuation,
    task_markdown: RenderedSection,
) -> RenderedContinuation:
    description_shown = any(
        b.kind is SourceKind.DESCRIPTION and not b.truncated for b in task_markdown.sources
    )
    options = ContinuationOptions(
        description_displayed=description_shown,
        task_displayed=bool(task_markdown.text),
        brief_truncated=task_markdown.truncated,
        limits=request.limits,
    )
    return hooks.render_continuation(continuation, task, wake.comments, options)


def _render_wake_prompt(
    hooks: PromptHooks,
    request: AssemblyRequest,
    task: TaskSource,
    wake: WakeSource,
    selection: SectionSelection,
    continuation: RenderedContinuation | None,
) -> RenderedSection:
    if not selection.wake_prompt:
        return RenderedSection("wake_prompt", "")
    options = WakePromptOptions(
        resumed=request.attempt is SessionAttempt.RESUMED,
        rules=selection.wake_rules is Placement.USER_PROMPT,
        suppressed_comment_ids=continuation.suppressed_comment_ids if continuation else frozenset(),
        limits=request.limits,
    )
    return hooks.render_wake_prompt(wake, task, options)


def _user_sections(
    request: AssemblyRequest,
    task: TaskSource,
    wake: WakeSource,
    selection: SectionSelection,
    task_markdown: RenderedSection,
    continuation: RenderedContinuation | None,
    wake_prompt: RenderedSection,
) -> list[RenderedSection]:
    """The automatic user prompt's sections, in order."""
    sections: list[RenderedSection] = []
    if selection.bootstrap:
        sections.append(render_bootstrap(request.agent.name, task, request.run_id, request.attempt))
    if selection.default_rules is Placement.USER_PROMPT:
        sections.append(RenderedSection("default_rules", DEFAULT_RULES))
    if selection.instructions:
        sections.append(render_instructions(request.agent.instructions))
    sections.append(task_markdown)
    if selection.history:
        earlier, left_out = normalize_history(request.history, wake, task, request.limits)
        sections.append(render_history(earlier, left_out, request.limits))
    if continuation is not None:
        sections.append(continuation.section)
    sections.append(wake_prompt)
    return sections


def _system_text(selection: SectionSelection) -> str | None:
    """What the provider's own carrier holds (Pi's system extension, a gateway contract)."""
    text = join_blocks(
        [
            DEFAULT_RULES if selection.default_rules is Placement.SYSTEM_CARRIER else "",
            WAKE_RULES if selection.wake_rules is Placement.SYSTEM_CARRIER else "",
        ]
    )
    return text or None


def _schema_for(request: AssemblyRequest) -> str:
    # A run or session keeps the schema it was persisted under until it ends (session
    # pinning); the ownership switch only decides what new sessions are written as.
    if request.previous is not None:
        return request.previous.schema
    return EXECUTION_INPUT_V5 if request.ownership else EXECUTION_INPUT_V4


def _continuation_for(
    request: AssemblyRequest, task: TaskSource, wake: WakeSource, v5: bool
) -> Continuation | None:
    if request.attempt is not SessionAttempt.RESUMED:
        return None
    continuation = request.continuation
    if continuation is None and request.resume_delta is not None:
        continuation = build_continuation(task, request.resume_delta, wake.comments)
    if continuation is None and request.previous is not None:
        continuation = request.previous.continuation
    if continuation is not None and not v5:
        # v4 has no objectiveSource: the objective is then always shown in full.
        continuation = replace(continuation, objective_source=None)
    return continuation


def _previous_description_revision(previous: ExecutionInput | None) -> str | None:
    if previous is None:
        return None
    context = previous.turn_context
    if context is not None:
        ref = context.assignment.description
        return ref.revision if ref is not None else None
    return revision(previous.task.description) if previous.task.description else None


def _render_custom_template(
    request: AssemblyRequest,
    hooks: PromptHooks,
    task: TaskSource,
    wake: WakeSource,
    selection: SectionSelection,
    wake_prompt: RenderedSection,
    payload: dict[str, Any],
    turn_context: TurnContext | None,
) -> tuple[str, tuple[SourceBlock, ...]]:
    """Fill an explicit template. Its variables stay complete; a variable's sources count as
    rendered only when the template placed the whole variable."""
    mode = selection.task_markdown
    if mode is TaskMarkdownMode.OMIT:
        mode = TaskMarkdownMode.FULL
    historical = _render_task_markdown(hooks, request, task, wake, mode, assignment_only=False)
    assignment = _render_task_markdown(hooks, request, task, wake, mode, assignment_only=True)
    context: dict[str, Any] = {
        "runId": request.run_id,
        "lane": request.lane.value,
        "attempt": request.attempt.value,
        "provider": request.provider,
        "agent": {"name": request.agent.name},
        "issue": task_to_wire(task),
        "paperclipWake": payload,
        "paperclipTaskMarkdown": historical.text,
        "paperclipWakePrompt": wake_prompt.text,
    }
    if turn_context is not None:
        context["paperclipTurnContext"] = turn_context_to_wire(turn_context)
    sections = {
        "taskMarkdown": historical,
        "taskMarkdownAssignment": assignment,
        "wakePrompt": wake_prompt,
    }
    variables: dict[str, Any] = {
        "taskMarkdown": historical.text,
        "taskMarkdownAssignment": assignment.text,
        "wakePrompt": wake_prompt.text,
        "wakeJson": json.dumps(payload, ensure_ascii=False, sort_keys=True),
        "context": context,
        "turnContext": context.get("paperclipTurnContext"),
    }
    assert request.custom_template is not None
    text, used = render_template(request.custom_template, variables)
    rendered = tuple(b for name, s in sections.items() if name in used for b in s.sources)
    return text, rendered


def check_ownership(
    context: TurnContext, rendered: tuple[SourceBlock, ...], selection: SectionSelection
) -> None:
    """Raise :class:`OwnershipError` unless each owned source is rendered once, by its owner.

    Every current comment must be rendered exactly once (by the wake prompt, or by
    the continuation it points to). The description is rendered exactly once by a
    full brief and at most once by a compact one.
    """
    counts: Counter[tuple[SourceKind, str]] = Counter(
        (b.kind, b.id) for b in rendered if b.kind is not SourceKind.TASK
    )
    expected: dict[tuple[SourceKind, str], str] = {
        (SourceKind.COMMENT, ref.id): ref.revision for ref in context.events.comments
    }
    description = context.assignment.description
    if description is not None:
        expected[(SourceKind.DESCRIPTION, description.id)] = description.revision
    for block in rendered:
        key = (block.kind, block.id)
        if block.kind is SourceKind.TASK:
            continue
        if key not in expected:
            raise OwnershipError(f"{block.kind.value} {block.id} is rendered but not owned")
        if block.revision != expected[key]:
            raise OwnershipError(f"{block.kind.value} {block.id} is rendered at another revision")
        allowed = (
            {"task_markdown"}
            if block.kind is SourceKind.DESCRIPTION
            else {
                "wake_prompt",
                "continuation",
            }
        )
        if block.section not in allowed:
            raise OwnershipError(f"{block.kind.value} {block.id} is rendered by {block.section}")
    for (kind, source_id), _ in expected.items():
        n = counts[(kind, source_id)]
        if kind is SourceKind.COMMENT and n != 1:
            raise OwnershipError(f"comment {source_id} is rendered {n} times, not once")
        if kind is SourceKind.DESCRIPTION:
            full = selection.task_markdown is TaskMarkdownMode.FULL
            if n > 1 or (full and n != 1):
                raise OwnershipError(f"description {source_id} is rendered {n} times")


def validate_completion(
    execution_input: ExecutionInput,
    references: tuple[CompletionReference, ...],
    hooks: PromptHooks,
) -> ReferenceCheck:
    """Check a completion report's references against what this input rendered."""
    return hooks.validate_completion_references(references, execution_input.completion_sources)
