"""Registers the ``gateway`` provider kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind
from paperclip_provider_kit.registration import ModelAccess, provider_kind

from paperclip_gateway.driver import GatewayDriver
from paperclip_gateway.probe import probe
from paperclip_gateway.profile import DEFAULT_PROFILE
from paperclip_gateway.schema import CONFIG_SCHEMA

CAPABILITIES = ProviderCapabilities(
    # A message during a turn is another agent request on the same session, run after
    # the current one (OpenClaw does not steer a run an `agent` request started).
    steer=False,
    follow_up=True,
    resume=True,  # a session key is a conversation the gateway keeps
    mcp_tools=True,  # through the runner's tool relay
    fresh_retry=False,
    system_prompt=True,  # the agent request's extraSystemPrompt
)


def model_access(config: Mapping[str, Any]) -> Any:
    """Nothing (hook API 1.9): the gateway reaches its models itself, where its launch
    profile (the runner host's) points."""
    return ModelAccess()


@hookimpl
def paperclip_providers() -> list[ProviderKind]:
    """The ``gateway`` kind: a remote agent behind an OpenClaw gateway WebSocket."""
    return [
        provider_kind(
            name="gateway",
            capabilities=CAPABILITIES,
            create_driver=GatewayDriver,  # one driver a run
            description="A remote agent behind an OpenClaw gateway: exactly-once runs by idempotency key",
            config_schema=CONFIG_SCHEMA,
            launch={"default": DEFAULT_PROFILE},
            probe=probe,
            model_access=model_access,
        )
    ]
