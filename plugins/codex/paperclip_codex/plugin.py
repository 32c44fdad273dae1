"""Registers the ``codex`` provider kind."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import (
    DriverContext,
    ProviderCapabilities,
    ProviderDriver,
    ProviderKind,
)

from paperclip_codex.config import DEFAULT_COMMAND
from paperclip_codex.driver import CodexDriver
from paperclip_codex.probe import probe
from paperclip_codex.schema import CONFIG_SCHEMA

CAPABILITIES = ProviderCapabilities(
    steer=True, resume=True, mcp_tools=True, fresh_retry=True, system_prompt=True
)


def create_driver(context: DriverContext) -> ProviderDriver:
    """A driver for one run; the process starts with its first turn."""
    return CodexDriver(context)


@hookimpl
def paperclip_providers() -> list[ProviderKind]:
    """The ``codex`` kind: OpenAI Codex through ``codex app-server`` (JSON-RPC on stdio)."""
    return [
        ProviderKind(
            name="codex",
            capabilities=CAPABILITIES,
            create_driver=create_driver,
            description="OpenAI Codex via `codex app-server`: steerable turns, resumable threads, MCP tools",
            config_schema=CONFIG_SCHEMA,
            launch={"default": DEFAULT_COMMAND},
            probe=probe,
        )
    ]
