"""Plugin tools: tools a plugin adds to the model's catalog, with their receipts (hook API 1.5).

A plugin tool is served to the model beside the core's tools (same MCP
server, same journal: admitted before it runs, its result saved before it is
returned). Unlike a core tool, its effect happens outside Paperclip's
database, so it cannot commit with the saved result: a restart between the
effect and the saved result leaves an input that *may* have had its effect.
For that case each tool answers a **receipt lookup** (the tool-recovery
receipts family): given a command id, the durable receipt of the effect, or
``None`` (no effect is known), or :class:`ToolOutcomeUnknown` raised
(``semantic_tool_outcome_unknown``). The tool is never run again for the
same input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from paperclip_hookspecs._markers import hookspec
from paperclip_hookspecs.receipts import SEMANTIC_TOOL_OUTCOME_UNKNOWN, ToolReceipt


class ToolOutcomeUnknown(Exception):
    """Raised by a receipt lookup that cannot tell whether the effect happened.

    The core reports it to the recovery hook as ``authority_answer =
    semantic_tool_outcome_unknown``; any other exception of a lookup counts the same.
    """

    code = SEMANTIC_TOOL_OUTCOME_UNKNOWN


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a plugin tool, as the control plane journaled it."""

    run_id: str
    company_id: str
    agent_id: str
    issue_id: str | None
    call_id: str
    command_id: str
    """Stable for every replay of the call (``<run>:cmd:<id>`` when the model passed its
    own ``command_id``, else ``<run>:<call id>``): use it as the effect's idempotency key
    and as the key of its receipt."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """Already validated against the tool's ``input_schema``."""


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What a plugin tool returns to the model."""

    result: Mapping[str, Any]
    is_error: bool = False


@runtime_checkable
class ToolHandler(Protocol):
    """The async half of a plugin tool: its effect, and the lookup of its receipts."""

    async def call(self, call: ToolCall) -> ToolAnswer:
        """Make the effect and answer. Raising answers the model ``plugin_failed``."""
        ...

    async def find_receipt(self, command_id: str) -> ToolReceipt | None:
        """The durable receipt of ``command_id``'s effect, ``None`` when there was none,
        or raise :class:`ToolOutcomeUnknown` when that cannot be told."""
        ...


@dataclass(frozen=True, slots=True)
class PluginTool:
    """A tool a plugin contributes to the catalog."""

    name: str
    """A wire identifier (``[a-z][a-z0-9_]*``); it may not be a core tool's name."""
    description: str
    input_schema: Mapping[str, Any]
    """A JSON Schema object; arguments outside it are refused before ``call``."""
    handler: ToolHandler
    title: str = ""
    read_only: bool = False
    """MCP ``readOnlyHint``."""
    destructive: bool = False
    """MCP ``destructiveHint``."""
    idempotent: bool = False
    """MCP ``idempotentHint``: repeating a call with the same arguments changes nothing more."""
    open_world: bool = True
    """MCP ``openWorldHint``: it reaches beyond the task's own records (usually true)."""


@hookspec
def paperclip_tools() -> list[PluginTool]:  # type: ignore[empty-body]
    """Register tools the model may call, beside the core's.

    Returns a list of :class:`PluginTool`; the host flattens the lists of all
    plugins and refuses two tools with one name (or a core tool's name),
    naming both.
    """
