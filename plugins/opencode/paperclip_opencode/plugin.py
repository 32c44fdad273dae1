"""Registers the ``opencode`` provider kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind
from paperclip_provider_kit.registration import endpoint_access, provider_kind

from paperclip_opencode.config import DEFAULT_COMMAND, OpenCodeSettings
from paperclip_opencode.driver import OpenCodeDriver
from paperclip_opencode.probe import probe
from paperclip_opencode.schema import CONFIG_SCHEMA

CAPABILITIES = ProviderCapabilities(
    # A message sent during a turn is queued after the running step: a follow-up,
    # not a steer into the model's current step.
    steer=False,
    follow_up=True,
    resume=True,
    mcp_tools=True,
    fresh_retry=True,
    system_prompt=True,
)


def model_access(config: Mapping[str, Any]) -> Any:
    """What the config asks of the runner host's model profile (hook API 1.9): its endpoint
    (``builtin`` without ``base_url``), the key variable."""
    settings = OpenCodeSettings.from_config(config)
    return endpoint_access(settings.base_url, settings.env_key)


@hookimpl
def paperclip_providers() -> list[ProviderKind]:
    """The ``opencode`` kind: OpenCode through ``opencode serve`` (HTTP API and events)."""
    return [
        provider_kind(
            name="opencode",
            capabilities=CAPABILITIES,
            create_driver=OpenCodeDriver,  # one driver a run
            description="OpenCode via `opencode serve`: queued follow-ups, resumable sessions, MCP tools",
            config_schema=CONFIG_SCHEMA,
            launch={"default": DEFAULT_COMMAND},
            probe=probe,
            model_access=model_access,
        )
    ]
