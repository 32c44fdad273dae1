"""Registers the ``pi`` provider kind."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import (
    DriverContext,
    ProviderCapabilities,
    ProviderDriver,
    ProviderKind,
)

from paperclip_pi.config import DEFAULT_COMMAND
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


def create_driver(context: DriverContext) -> ProviderDriver:
    """A driver for one run; Pi starts with its first turn."""
    return PiDriver(context)


@hookimpl
def paperclip_providers() -> list[ProviderKind]:
    """The ``pi`` kind: Pi through ``pi --mode rpc`` (JSON lines on stdio)."""
    return [
        ProviderKind(
            name="pi",
            capabilities=CAPABILITIES,
            create_driver=create_driver,
            description="Pi via `pi --mode rpc`: steerable turns, resumable sessions, tools through its extension",
            config_schema=CONFIG_SCHEMA,
            launch={"default": DEFAULT_COMMAND},
            probe=probe,
        )
    ]
