"""Registers the ``pi`` provider kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind
from paperclip_provider_kit.registration import endpoint_access, provider_kind

from paperclip_pi.config import DEFAULT_COMMAND, PiSettings
from paperclip_pi.driver import PiDriver
from paperclip_pi.probe import probe
from paperclip_pi.schema import CONFIG_SCHEMA

CAPABILITIES = ProviderCapabilities(
    steer=True,  # Pi's steer: read before the model's next call, in the same turn
    follow_up=True,
    resume=True,
    mcp_tools=True,  # through the bundled extension
    fresh_retry=True,
    system_prompt=True,  # appended to Pi's system prompt
)


def model_access(config: Mapping[str, Any]) -> Any:
    """What the config asks of the runner host's model profile (hook API 1.9): its endpoint
    (``builtin`` without ``base_url``), the key variable."""
    settings = PiSettings.from_config(config)
    return endpoint_access(settings.base_url, settings.env_key)


@hookimpl
def paperclip_providers() -> list[ProviderKind]:
    """The ``pi`` kind: Pi through ``pi --mode rpc`` (JSON lines on stdio)."""
    return [
        provider_kind(
            name="pi",
            capabilities=CAPABILITIES,
            create_driver=PiDriver,  # one driver a run
            description="Pi via `pi --mode rpc`: steerable turns, resumable sessions, tools through its extension",
            config_schema=CONFIG_SCHEMA,
            launch={"default": DEFAULT_COMMAND},
            probe=probe,
            model_access=model_access,
        )
    ]
