"""The catalog of server-owned tools: names, descriptions and argument schemas.

Shared by the runner (which lists them to the model over MCP) and the control
plane (which validates and executes them). Names are wire identifiers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    writes: bool
    """A write tool records an idempotent receipt keyed by its command id."""
    title: str = ""
    """A short human name, sent to MCP clients as the tool's title."""
    destructive: bool = False
    """May it delete or overwrite something? (MCP ``destructiveHint``; none of ours does.)"""
    open_world: bool = False
    """Does it reach beyond the task's own records? (MCP ``openWorldHint``; none of ours does.)"""
    idempotent: bool | None = None
    """MCP ``idempotentHint``; unset: a read is, a write is not (a plugin tool may say)."""

    @property
    def annotations(self) -> dict[str, Any]:
        """The MCP tool annotations: how a client judges the tool without calling it.

        Clients gate tool calls on them: Codex asks for approval (or refuses the
        call outright under approval policy ``never``) when a tool does not say
        it is read-only, non-destructive and closed-world.
        """
        return {
            "title": self.title or self.name,
            "readOnlyHint": not self.writes,
            "destructiveHint": self.destructive,
            # Repeating a write with the same command_id returns the first receipt.
            "idempotentHint": not self.writes if self.idempotent is None else self.idempotent,
            "openWorldHint": self.open_world,
        }


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


COMMAND_ID = {
    "type": "string",
    "minLength": 1,
    "maxLength": 100,
    "description": "Optional: your id for this action. Calling again with the same command_id "
    "returns the first result instead of acting twice.",
}


def _write(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return _object({**properties, "command_id": COMMAND_ID}, required)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_task_context",
        title="Read the task",
        description=(
            "Read the task you are working on: its title, description, status, and its "
            "comments, oldest first. Call it before you act on the task."
        ),
        input_schema=_object({}, []),
        writes=False,
    ),
    ToolSpec(
        name="read_current_wake_comments",
        title="Read the current wake comments",
        description=(
            "Read every comment this run was woken for, in full and oldest first, one page at "
            "a time. Call it without a cursor for the first page, then with each page's "
            "next_cursor until complete is true. When your prompt did not show all of them "
            "in full, finish is refused until you have read every page."
        ),
        input_schema=_object(
            {
                "cursor": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "description": "The next_cursor of the page you read last (or the cursor "
                    "a finish correction gave you). Leave it out for the first page.",
                }
            },
            [],
        ),
        writes=False,
    ),
    ToolSpec(
        name="post_comment",
        title="Post a comment",
        description="Post a comment on your task, visible to the people working with you.",
        input_schema=_write(
            {"body": {"type": "string", "minLength": 1, "maxLength": 100_000}}, ["body"]
        ),
        writes=True,
    ),
    ToolSpec(
        name="report_progress",
        title="Report progress",
        description="Record a short progress note on the run (not a comment).",
        input_schema=_write(
            {"summary": {"type": "string", "minLength": 1, "maxLength": 2_000}}, ["summary"]
        ),
        writes=True,
    ),
    ToolSpec(
        name="finish",
        title="Finish the task",
        description=(
            "Report that your work on the task is complete. outcome 'done' closes the task; "
            "'needs_review' asks a person to review it; 'yielded' ends your turn while the "
            "task waits on a person (a question you asked, an approval, a stage). Give a "
            "summary of what you did."
        ),
        input_schema=_write(
            {
                "outcome": {"type": "string", "enum": ["done", "needs_review", "yielded"]},
                "summary": {"type": "string", "minLength": 1, "maxLength": 20_000},
                "details": {"type": "object"},
                "references": {
                    "type": "array",
                    "maxItems": 200,
                    "description": "The sources your report relies on, as shown in your prompt: "
                    "the task, its description, or a comment, with the revision shown.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "kind": {"type": "string", "enum": ["task", "description", "comment"]},
                            "id": {"type": "string", "minLength": 1, "maxLength": 100},
                            "revision": {"type": "string", "maxLength": 64},
                        },
                        "required": ["kind", "id"],
                        "additionalProperties": False,
                    },
                },
            },
            ["outcome", "summary"],
        ),
        writes=True,
    ),
    ToolSpec(
        name="request_human_input",
        title="Ask the person",
        description=(
            "Ask the person a question, or for a confirmation, as a card in the chat. The "
            "task waits for the answer: end your turn with finish outcome 'yielded'; you "
            "are woken with the answer."
        ),
        input_schema=_write(
            {
                "kind": {"type": "string", "enum": ["question", "confirmation"]},
                "title": {"type": "string", "minLength": 1, "maxLength": 500},
                "body": {"type": "string", "maxLength": 20_000},
                "options": {
                    "type": "array",
                    "maxItems": 20,
                    "items": {"type": "string", "minLength": 1, "maxLength": 200},
                },
            },
            ["kind", "title"],
        ),
        writes=True,
    ),
    ToolSpec(
        name="delegate",
        title="Hand a part to a report",
        description=(
            "Hand a part of your task to an agent who reports to you (directly or through "
            "others): a new issue, a part of your task, assigned to it. Name the agent by its "
            "name or its role. You are woken when that part ends (done, blocked or failed)."
        ),
        input_schema=_write(
            {
                "to": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "description": "The agent's name, or its role when one report has it.",
                },
                "title": {"type": "string", "minLength": 1, "maxLength": 500},
                "description": {"type": "string", "maxLength": 100_000},
            },
            ["to", "title"],
        ),
        writes=True,
    ),
    ToolSpec(
        name="block",
        title="Report a blocker",
        description="Report that you cannot go on without help, and why.",
        input_schema=_write(
            {"reason": {"type": "string", "minLength": 1, "maxLength": 20_000}}, ["reason"]
        ),
        writes=True,
    ),
)

BY_NAME = {tool.name: tool for tool in TOOLS}
