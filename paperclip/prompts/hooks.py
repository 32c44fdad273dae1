"""What prompt assembly needs from the plugins: the prompt-rendering calls.

The plugin host (``paperclip.plugin_host.PluginHost``) is the one object that
answers them, through its typed facade over the hooks, so an installed plugin
is asked before the built-in rendering (``paperclip.plugin_host.builtin.prompts``).
"""

from __future__ import annotations

from typing import Protocol

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


class PromptHooks(Protocol):
    """The prompt-rendering hooks, as the plugin host calls them."""

    def render_task_markdown(
        self, task: TaskSource, options: TaskMarkdownOptions
    ) -> RenderedSection: ...

    def render_wake_prompt(
        self, wake: WakeSource, task: TaskSource, options: WakePromptOptions
    ) -> RenderedSection: ...

    def build_turn_context(self, task: TaskSource, wake: WakeSource) -> TurnContext: ...

    def select_prompt_sections(self, request: SectionRequest) -> SectionSelection: ...

    def render_continuation(
        self,
        continuation: Continuation,
        task: TaskSource,
        comments: tuple[CommentSource, ...],
        options: ContinuationOptions,
    ) -> RenderedContinuation: ...

    def validate_completion_references(
        self, references: tuple[CompletionReference, ...], rendered: tuple[SourceBlock, ...]
    ) -> ReferenceCheck: ...

    def render_completion_recovery(self, task: TaskSource, run: RunView) -> RenderedSection: ...
