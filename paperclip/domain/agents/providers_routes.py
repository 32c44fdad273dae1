"""The provider kinds over HTTP: what each can do and its config's JSON Schema; and the check
of one agent (``paperclip doctor`` for an agent)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec
from litestar import Controller, get, post
from litestar.status_codes import HTTP_200_OK
from paperclip_hookspecs.providers import ProviderKind

from paperclip.domain.agents.agent_checks import AgentCheck, AgentChecks
from paperclip.domain.agents.openapi_providers import config_schema_of
from paperclip.domain.agents.schemas import CapabilitiesOut
from paperclip.http.access import Access, access
from paperclip.http.errors import error_responses
from paperclip.plugin_host import PluginHost


class ProviderOut(msgspec.Struct):
    name: str
    description: str
    capabilities: CapabilitiesOut
    config_schema: dict[str, Any]
    """JSON Schema (2020-12) of an agent's ``provider_config`` (``launch`` included): what
    ``POST …/agents`` checks, and what the board's agent form is made from."""
    launch_profiles: list[str]
    """The launch profiles the plugin offers by default (a runner host may change them)."""

    @classmethod
    def of(cls, kind: ProviderKind) -> ProviderOut:
        caps = kind.capabilities
        return cls(
            name=kind.name,
            description=kind.description,
            capabilities=CapabilitiesOut(
                steer=caps.steer,
                follow_up=caps.follow_up,
                resume=caps.resume,
                mcp_tools=caps.mcp_tools,
                fresh_retry=caps.fresh_retry,
                system_prompt=caps.system_prompt,
            ),
            config_schema=config_schema_of(kind),
            launch_profiles=sorted(kind.launch),
        )


class ProvidersOut(msgspec.Struct):
    items: list[ProviderOut]


class CheckOut(msgspec.Struct):
    name: str
    """``provider_installed``, ``config_valid``, ``agent_active``, ``runner_connected``,
    ``launch_profile_offered`` or ``cli_installed``."""
    status: Literal["ok", "warning", "failed", "unknown"]
    message: str
    code: str | None
    """The code a write or a run would fail with (``invalid_provider_config``, ...)."""


class RunnerOfferOut(msgspec.Struct):
    runner: str
    hosts_provider: bool
    launch_profiles: list[str] | None
    """The provider's profiles it offers, by name; null: it did not say (an older runner)."""
    cli_found: bool | None
    """Whether the agent's profile's CLI is installed there; null: not probed (yet)."""
    cli_version: str | None
    hint: str


class AgentCheckOut(msgspec.Struct):
    agent_id: uuid.UUID
    provider: str
    launch_profile: str
    ok: bool
    """No check failed: a run of the agent should start."""
    checks: list[CheckOut]
    runners: list[RunnerOfferOut]
    """The connected runners, and what each offers the agent."""
    checked_at: datetime

    @classmethod
    def of(cls, found: AgentCheck) -> AgentCheckOut:
        return cls(
            agent_id=found.agent.id,
            provider=found.agent.provider,
            launch_profile=found.launch_profile,
            ok=found.ok,
            checks=[msgspec.convert(c, CheckOut, from_attributes=True) for c in found.checks],
            runners=[
                msgspec.convert(r, RunnerOfferOut, from_attributes=True) for r in found.runners
            ],
            checked_at=datetime.now(UTC),
        )


class ProviderController(Controller):
    tags = ["providers"]

    @get("/providers", opt=access(Access.SIGNED_IN))
    async def list_providers(self, plugin_host: PluginHost) -> ProvidersOut:
        """The installed provider kinds, by name, each with its config's JSON Schema."""
        kinds = sorted(plugin_host.providers(), key=lambda k: k.name)
        return ProvidersOut([ProviderOut.of(k) for k in kinds])

    @post(
        "/companies/{company_id:uuid}/agents/{agent_id:uuid}/check",
        status_code=HTTP_200_OK,
        opt=access(Access.READ),
        responses=error_responses(404),
        description="Check an agent as `paperclip doctor` checks a machine, without starting "
        "anything: its provider installed on the server, its config valid, the agent active, a "
        "connected runner hosting the provider and offering its launch profile, and that "
        "profile's CLI found there (as the runners probed it when they started).",
    )
    async def check_agent(
        self,
        company_id: uuid.UUID,
        agent_id: uuid.UUID,
        agent_checks: AgentChecks,
        plugin_host: PluginHost,
    ) -> AgentCheckOut:
        return AgentCheckOut.of(
            await agent_checks.check(company_id, agent_id, plugin_host.providers())
        )
