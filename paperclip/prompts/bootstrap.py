"""The session bootstrap: who the agent is, what run this is, and its instructions.

Sent to fresh sessions and fresh retries; a resumed session already holds it.
"""

from __future__ import annotations

from paperclip_hookspecs.prompts import RenderedSection, SessionAttempt, TaskSource

from paperclip.prompts.markdown import join_blocks
from paperclip.revisions import source_text

RETRY_NOTICE = (
    "Your previous session could not be resumed, so this is a fresh session with the full "
    "brief. Work from the earlier attempt may already exist: check the current state of the "
    "task before repeating any action."
)


def render_bootstrap(
    agent_name: str, task: TaskSource, run_id: str, attempt: SessionAttempt
) -> RenderedSection:
    """The opening of a fresh session; a fresh retry also says that it is one."""
    who = f"You are {agent_name}, an agent" if agent_name else "You are an agent"
    run = f" in run {run_id}" if run_id else ""
    blocks = [
        "## Paperclip run",
        f"{who} working through Paperclip on issue {task.identifier or task.id}{run}.",
    ]
    if attempt is SessionAttempt.FRESH_RETRY:
        blocks.append(RETRY_NOTICE)
    return RenderedSection("bootstrap", join_blocks(blocks))


def render_instructions(instructions: str) -> RenderedSection:
    """The agent's configured instructions, verbatim apart from sanitizing."""
    text = source_text(instructions)
    return RenderedSection("instructions", f"## Agent instructions\n\n{text}" if text else "")
