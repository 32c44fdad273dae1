"""Registers the ``codex`` provider kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind
from paperclip_provider_kit.registration import endpoint_access, provider_kind

from paperclip_codex.config import DEFAULT_COMMAND, CodexSettings
from paperclip_codex.driver import CodexDriver
from paperclip_codex.probe import probe
from paperclip_codex.schema import CONFIG_SCHEMA

CAPABILITIES = ProviderCapabilities(
    steer=True, resume=True, mcp_tools=True, fresh_retry=True, system_prompt=True
)


def model_access(config: Mapping[str, Any]) -> Any:
    """What the config asks of the runner host's model profile (hook API 1.9): its endpoint
    (``builtin`` without ``base_url``), the key variable, the sandbox and approval answers."""
    settings = CodexSettings.from_config(config)
    return endpoint_access(
        settings.base_url, settings.env_key, sandbox=settings.sandbox, approvals=settings.approvals
    )


@hookimpl
def paperclip_providers() -> list[ProviderKind]:
    """The ``codex`` kind: OpenAI Codex through ``codex app-server`` (JSON-RPC on stdio)."""
    return [
        provider_kind(
            name="codex",
            capabilities=CAPABILITIES,
            create_driver=CodexDriver,  # one driver a run
            description="OpenAI Codex via `codex app-server`: steerable turns, resumable threads, MCP tools",
            config_schema=CONFIG_SCHEMA,
            launch={"default": DEFAULT_COMMAND},
            probe=probe,
            model_access=model_access,
        )
    ]
