"""Agents: the configured workers of a company."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import Cursor, get_scoped, keyset_page
from paperclip.domain.agents.model_access import AccessReader, refuse_unoffered_access
from paperclip.domain.agents.org_chart import (
    OrgNode,
    lock_tree,
    manager_ref,
    org_chart,
    tree_refusal,
)
from paperclip.domain.agents.provider_configs import ConfigCheck
from paperclip.domain.companies.companies import company_writes, require_company
from paperclip.domain.projects.projects import project_ref
from paperclip.errors import ConflictError
from paperclip.models import Agent, AgentStatus


class AgentService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def create(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        *,
        name: str,
        role: str,
        provider: str,
        provider_config: dict[str, Any],
        check_config: ConfigCheck,
        default_project_id: uuid.UUID | None = None,
        heartbeat_seconds: int | None = None,
        model_access: AccessReader | None = None,
        reports_to: uuid.UUID | None = None,
    ) -> Agent:
        """Create an agent; ``check_config`` refuses a provider or config that does not fit,
        and ``model_access`` one that no runner's model profile allows; ``reports_to`` must
        be an agent of the company (None: it is at the top)."""
        try:
            async with company_writes(self.sessions, company_id) as session:
                await require_company(session, company_id)
                check_config(provider, provider_config)
                if model_access is not None:
                    await refuse_unoffered_access(session, provider, provider_config, model_access)
                if default_project_id is not None:
                    await project_ref(
                        session, company_id, default_project_id, field="default_project_id"
                    )
                if reports_to is not None:
                    await manager_ref(session, company_id, reports_to)
                agent = Agent(
                    id=uuid.uuid4(),
                    company_id=company_id,
                    name=name,
                    role=role,
                    provider=provider,
                    provider_config=provider_config,
                    status=AgentStatus.ACTIVE,
                    default_project_id=default_project_id,
                    heartbeat_seconds=heartbeat_seconds,
                    reports_to=reports_to,
                )
                session.add(agent)
                await session.flush()
                record_activity(
                    session,
                    actor,
                    "agent.created",
                    entity_type="agent",
                    entity_id=agent.id,
                    company_id=company_id,
                    details={"name": name, "provider": provider, "reports_to": _id(reports_to)},
                )
        except IntegrityError as exc:
            raise tree_refusal(exc) or ConflictError(
                f"an agent named {name!r} already exists in this company", code="agent_name_taken"
            ) from exc
        return agent

    async def get(self, company_id: uuid.UUID, agent_id: uuid.UUID) -> Agent:
        async with self.sessions() as session:
            return await get_scoped(session, Agent, company_id, agent_id, "agent")

    async def list(
        self, company_id: uuid.UUID, *, after: Cursor | None, limit: int
    ) -> tuple[list[Agent], Cursor | None]:
        async with self.sessions() as session:
            await require_company(session, company_id)
            stmt = select(Agent).where(Agent.company_id == company_id)
            return await keyset_page(session, stmt, Agent, after, limit)

    async def org_chart(self, company_id: uuid.UUID) -> list[OrgNode]:
        """The company's agents as a tree, depth first, each with its active runs."""
        async with self.sessions() as session:
            await require_company(session, company_id)
            return await org_chart(session, company_id)

    async def update(
        self,
        actor: Actor,
        company_id: uuid.UUID,
        agent_id: uuid.UUID,
        changes: dict[str, Any],
        check_config: ConfigCheck,
        model_access: AccessReader | None = None,
    ) -> Agent:
        try:
            async with company_writes(self.sessions, company_id) as session:
                if "reports_to" in changes:
                    await lock_tree(session, company_id)
                agent = await get_scoped(
                    session, Agent, company_id, agent_id, "agent", for_update=True
                )
                if "provider" in changes or "provider_config" in changes:
                    provider = changes.get("provider", agent.provider)
                    config = changes.get("provider_config", agent.provider_config)
                    check_config(provider, config)
                    if model_access is not None:
                        await refuse_unoffered_access(session, provider, config, model_access)
                if (project_id := changes.get("default_project_id")) is not None:
                    await project_ref(session, company_id, project_id, field="default_project_id")
                moved = "reports_to" in changes and changes["reports_to"] != agent.reports_to
                if moved and changes["reports_to"] is not None:
                    await manager_ref(session, company_id, changes["reports_to"])
                before = agent.reports_to
                if changes.get("heartbeat_seconds", agent.heartbeat_seconds) != (
                    agent.heartbeat_seconds
                ):
                    agent.heartbeat_due_at = None  # the scheduler counts from its own clock
                for field, value in changes.items():
                    setattr(agent, field, value)
                await session.flush()
                record_activity(
                    session,
                    actor,
                    "agent.updated",
                    entity_type="agent",
                    entity_id=agent.id,
                    company_id=company_id,
                    details={"fields": sorted(changes)},
                )
                if moved:
                    # Its runs, issues and costs stay its own: only the line above it moves.
                    record_activity(
                        session,
                        actor,
                        "agent.moved",
                        entity_type="agent",
                        entity_id=agent.id,
                        company_id=company_id,
                        details={"from": _id(before), "to": _id(agent.reports_to)},
                    )
        except IntegrityError as exc:
            raise tree_refusal(exc) or ConflictError(
                "an agent with that name already exists in this company", code="agent_name_taken"
            ) from exc
        return agent

    async def set_status(
        self, actor: Actor, company_id: uuid.UUID, agent_id: uuid.UUID, status: AgentStatus
    ) -> Agent:
        async with company_writes(self.sessions, company_id) as session:
            agent = await get_scoped(session, Agent, company_id, agent_id, "agent", for_update=True)
            if agent.status != status:
                agent.status = status
                verb = "paused" if status is AgentStatus.PAUSED else "resumed"
                record_activity(
                    session,
                    actor,
                    f"agent.{verb}",
                    entity_type="agent",
                    entity_id=agent.id,
                    company_id=company_id,
                )
        return agent

    async def delete(self, actor: Actor, company_id: uuid.UUID, agent_id: uuid.UUID) -> None:
        async with company_writes(self.sessions, company_id) as session:
            agent = await get_scoped(session, Agent, company_id, agent_id, "agent", for_update=True)
            await session.delete(agent)
            record_activity(
                session,
                actor,
                "agent.deleted",
                entity_type="agent",
                entity_id=agent_id,
                company_id=company_id,
                details={"name": agent.name},
            )


def _id(value: uuid.UUID | None) -> str | None:
    return str(value) if value is not None else None
