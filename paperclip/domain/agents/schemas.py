"""The bodies of the agents routes: msgspec structs that Litestar validates and documents."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType
from paperclip_hookspecs.providers import ProviderKind

from paperclip.http.fields import HeartbeatSeconds, JsonObject, Name, ProviderName, Role
from paperclip.models import Agent


class AgentCreate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    provider: ProviderName
    role: Role = ""
    provider_config: JsonObject = msgspec.field(default_factory=dict)
    default_project_id: uuid.UUID | None = None
    """The project of the issues it is given without one."""
    heartbeat_seconds: HeartbeatSeconds | None = None
    """Wake it this often while it is idle, to look at its open issues (null: never)."""
    reports_to: uuid.UUID | None = None
    """Its manager, an agent of the company (null: it is at the top of the org chart)."""


class AgentUpdate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name | UnsetType = UNSET
    role: Role | UnsetType = UNSET
    provider: ProviderName | UnsetType = UNSET
    provider_config: JsonObject | UnsetType = UNSET
    default_project_id: uuid.UUID | UnsetType | None = UNSET
    heartbeat_seconds: HeartbeatSeconds | UnsetType | None = UNSET
    reports_to: uuid.UUID | UnsetType | None = UNSET
    """Move it under another manager (null: to the top); its history stays its own."""


class CapabilitiesOut(msgspec.Struct):
    """What the agent's provider can do, as its plugin declares it (``ProviderCapabilities``)."""

    steer: bool
    follow_up: bool
    resume: bool
    mcp_tools: bool
    fresh_retry: bool
    system_prompt: bool


class AgentOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    name: str
    role: str
    provider: str
    provider_config: JsonObject
    status: Literal["active", "paused"]
    created_at: datetime
    updated_at: datetime
    default_project_id: uuid.UUID | None
    """The project of an issue created for (or assigned to) it without one."""
    capabilities: CapabilitiesOut | None = None
    """The provider's capabilities; null when no installed plugin provides it."""
    heartbeat_seconds: int | None = None
    heartbeat_due_at: datetime | None = None
    reports_to: uuid.UUID | None = None
    """Its manager (null: the top of the org chart)."""

    @classmethod
    def of(cls, row: Agent, kinds: Sequence[ProviderKind] = ()) -> AgentOut:
        kind = next((k for k in kinds if k.name == row.provider), None)
        out = msgspec.convert(row, cls, from_attributes=True)
        if kind is None:
            return out
        caps = kind.capabilities
        capabilities = CapabilitiesOut(
            steer=caps.steer,
            follow_up=caps.follow_up,
            resume=caps.resume,
            mcp_tools=caps.mcp_tools,
            fresh_retry=caps.fresh_retry,
            system_prompt=caps.system_prompt,
        )
        return msgspec.structs.replace(out, capabilities=capabilities)
