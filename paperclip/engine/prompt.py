"""The execution input of a run: the prompt and its versioned envelope."""

from __future__ import annotations

from typing import Any

from paperclip.models import Agent, Comment, Issue, WakeRequest


def build_execution_input(
    agent: Agent, issue: Issue | None, comments: list[Comment], wake: WakeRequest
) -> tuple[str, dict[str, Any], str]:
    """The prompt text, the execution-input envelope and its schema id."""
    lines = [f"You are {agent.name}" + (f", {agent.role}." if agent.role else ".")]
    if issue is not None:
        lines += [f"Your task is {issue.identifier}: {issue.title}", "", issue.description]
    lines += [
        "",
        "Use the paperclip tools: get_task_context to read the task and its comments,",
        "post_comment to talk to people, and finish (or block) to report the result.",
    ]
    prompt = "\n".join(lines)
    envelope = {"prompt": prompt, "wake": {"source": wake.source, "reason": wake.reason}}
    return prompt, envelope, "paperclip.native-execution-input.v5"
