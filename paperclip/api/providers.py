"""``GET /api/providers``: the provider kinds installed plugins offer, with what each can do."""

from __future__ import annotations

import msgspec
from litestar import Controller, get

from paperclip.api.access import Access, access
from paperclip.plugins import PluginHost


class CapabilitiesOut(msgspec.Struct):
    steer: bool
    """A message can enter a running turn."""
    resume: bool
    mcp_tools: bool
    fresh_retry: bool
    follow_up: bool
    system_prompt: bool


class ProviderOut(msgspec.Struct):
    name: str
    description: str
    capabilities: CapabilitiesOut
    launch_profiles: list[str]
    """The launch profiles the kind offers by default (a runner host may offer others)."""


class ProvidersOut(msgspec.Struct):
    items: list[ProviderOut]


class ProviderController(Controller):
    path = "/providers"
    tags = ["plugins"]

    @get("/", opt=access(Access.SIGNED_IN))
    async def list_providers(self, plugin_host: PluginHost) -> ProvidersOut:
        """Every provider kind agents may name, and its capabilities (e.g. whether it can steer)."""
        items = []
        for kind in plugin_host.providers():
            c = kind.capabilities
            items.append(
                ProviderOut(
                    kind.name,
                    kind.description,
                    CapabilitiesOut(
                        c.steer, c.resume, c.mcp_tools, c.fresh_retry, c.follow_up, c.system_prompt
                    ),
                    sorted(kind.launch),
                )
            )
        return ProvidersOut(sorted(items, key=lambda p: p.name))
