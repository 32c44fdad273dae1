"""The typed way core code calls the prompt-rendering hooks.

The plugin host builds one :class:`PromptHooks` from its plugin manager; tests
and standalone callers use :meth:`PromptHooks.builtin`. Each call returns the
first plugin's answer; the built-in plugin always answers, so a missing answer
means the built-in was not registered.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Protocol, TypeVar

import pluggy
from paperclip_hookspecs import PROJECT_NAME
from paperclip_hookspecs import prompts as spec
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

T = TypeVar("T")


class PromptHookUnanswered(RuntimeError):
    """No plugin answered a prompt hook: the built-in prompt plugin is not registered."""


def _answer(hook: str, result: object, kind: type[T]) -> T:
    if result is None:
        raise PromptHookUnanswered(f"no plugin answered {hook}; register paperclip.prompts.plugin")
    if not isinstance(result, kind):
        raise TypeError(f"{hook} returned {type(result).__name__}, not {kind.__name__}")
    return result


class HasHooks(Protocol):
    """A pluggy manager, or a view of one whose ``hook`` relay guards each call."""

    @property
    def hook(self) -> Any: ...


class PromptHooks:
    """Typed calls of the prompt-rendering hooks of one plugin manager."""

    def __init__(self, pm: HasHooks) -> None:
        self._hook: Any = pm.hook

    @classmethod
    def builtin(cls) -> PromptHooks:
        """A fresh plugin manager holding only the default rendering."""
        from paperclip.prompts import plugin

        pm = pluggy.PluginManager(PROJECT_NAME)
        pm.add_hookspecs(spec)
        pm.register(plugin, name="paperclip.prompts")
        return cls(pm)

    def render_task_markdown(
        self, task: TaskSource, options: TaskMarkdownOptions
    ) -> RenderedSection:
        return _answer(
            "paperclip_render_task_markdown",
            self._hook.paperclip_render_task_markdown(task=task, options=options),
            RenderedSection,
        )

    def render_wake_prompt(
        self, wake: WakeSource, task: TaskSource, options: WakePromptOptions
    ) -> RenderedSection:
        return _answer(
            "paperclip_render_wake_prompt",
            self._hook.paperclip_render_wake_prompt(wake=wake, task=task, options=options),
            RenderedSection,
        )

    def build_turn_context(self, task: TaskSource, wake: WakeSource) -> TurnContext:
        return _answer(
            "paperclip_build_turn_context",
            self._hook.paperclip_build_turn_context(task=task, wake=wake),
            TurnContext,
        )

    def select_prompt_sections(self, request: SectionRequest) -> SectionSelection:
        return _answer(
            "paperclip_select_prompt_sections",
            self._hook.paperclip_select_prompt_sections(request=request),
            SectionSelection,
        )

    def render_continuation(
        self,
        continuation: Continuation,
        task: TaskSource,
        comments: tuple[CommentSource, ...],
        options: ContinuationOptions,
    ) -> RenderedContinuation:
        return _answer(
            "paperclip_render_continuation",
            self._hook.paperclip_render_continuation(
                continuation=continuation, task=task, comments=comments, options=options
            ),
            RenderedContinuation,
        )

    def validate_completion_references(
        self, references: tuple[CompletionReference, ...], rendered: tuple[SourceBlock, ...]
    ) -> ReferenceCheck:
        return _answer(
            "paperclip_validate_completion_references",
            self._hook.paperclip_validate_completion_references(
                references=references, rendered=rendered
            ),
            ReferenceCheck,
        )

    def render_completion_recovery(self, task: TaskSource) -> RenderedSection:
        return _answer(
            "paperclip_render_completion_recovery",
            self._hook.paperclip_render_completion_recovery(task=task),
            RenderedSection,
        )


@cache
def builtin_hooks() -> PromptHooks:
    """The shared built-in-only hooks, for callers that have no plugin host."""
    return PromptHooks.builtin()
