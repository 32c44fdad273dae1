from __future__ import annotations

import uuid

from litestar import Controller, Response, delete, get, patch, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from paperclip.common.actor import Actor
from paperclip.domain.agents.agents import AgentService
from paperclip.domain.agents.provider_configs import ProviderConfigs
from paperclip.domain.agents.schemas import AgentCreate, AgentOut, AgentUpdate
from paperclip.domain.runs.schemas import WakeRequestOut, WakeupCreate
from paperclip.domain.runs.wakes import WakeService
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.fields import changes
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor
from paperclip.models import AgentStatus
from paperclip.plugin_host import PluginHost


class AgentController(Controller):
    path = "/companies/{company_id:uuid}/agents"
    tags = ["agents"]

    @get("/", opt=access(Access.READ), responses=error_responses(404))
    async def list_agents(
        self,
        company_id: uuid.UUID,
        agents: AgentService,
        pages: Pages,
        plugin_host: PluginHost,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[AgentOut]:
        rows, end = await agents.list(company_id, after=pages.after(cursor), limit=limit)
        kinds = plugin_host.providers()
        return pages.page([AgentOut.of(r, kinds) for r in rows], end)

    @post("/", opt=access(Access.MANAGE), responses=error_responses(404, 409, 422))
    async def create_agent(
        self,
        company_id: uuid.UUID,
        data: AgentCreate,
        agents: AgentService,
        actor: Actor,
        plugin_host: PluginHost,
    ) -> AgentOut:
        """``provider`` must be installed, ``provider_config`` fit its schema, and its model
        access a runner's model profile (422 otherwise)."""
        configs = ProviderConfigs(plugin_host.providers())
        agent = await agents.create(
            actor,
            company_id,
            name=data.name,
            role=data.role,
            provider=data.provider,
            provider_config=data.provider_config,
            check_config=configs.check,
            default_project_id=data.default_project_id,
            heartbeat_seconds=data.heartbeat_seconds,
            model_access=configs.access,
            reports_to=data.reports_to,
        )
        return AgentOut.of(agent, plugin_host.providers())

    @get("/{agent_id:uuid}", opt=access(Access.READ), responses=error_responses(404))
    async def get_agent(
        self,
        company_id: uuid.UUID,
        agent_id: uuid.UUID,
        agents: AgentService,
        plugin_host: PluginHost,
    ) -> AgentOut:
        return AgentOut.of(await agents.get(company_id, agent_id), plugin_host.providers())

    @patch("/{agent_id:uuid}", opt=access(Access.MANAGE), responses=error_responses(404, 409, 422))
    async def update_agent(
        self,
        company_id: uuid.UUID,
        agent_id: uuid.UUID,
        data: AgentUpdate,
        agents: AgentService,
        actor: Actor,
        plugin_host: PluginHost,
    ) -> AgentOut:
        kinds = plugin_host.providers()
        configs = ProviderConfigs(kinds)
        updated = await agents.update(
            actor, company_id, agent_id, changes(data), configs.check, configs.access
        )
        return AgentOut.of(updated, kinds)

    @delete("/{agent_id:uuid}", opt=access(Access.MANAGE), responses=error_responses(404))
    async def delete_agent(
        self, company_id: uuid.UUID, agent_id: uuid.UUID, agents: AgentService, actor: Actor
    ) -> None:
        await agents.delete(actor, company_id, agent_id)

    @post(
        "/{agent_id:uuid}/pause",
        status_code=HTTP_200_OK,
        opt=access(Access.MANAGE),
        responses=error_responses(404),
    )
    async def pause_agent(
        self,
        company_id: uuid.UUID,
        agent_id: uuid.UUID,
        agents: AgentService,
        actor: Actor,
        plugin_host: PluginHost,
    ) -> AgentOut:
        agent = await agents.set_status(actor, company_id, agent_id, AgentStatus.PAUSED)
        return AgentOut.of(agent, plugin_host.providers())

    @post(
        "/{agent_id:uuid}/resume",
        status_code=HTTP_200_OK,
        opt=access(Access.MANAGE),
        responses=error_responses(404),
    )
    async def resume_agent(
        self,
        company_id: uuid.UUID,
        agent_id: uuid.UUID,
        agents: AgentService,
        actor: Actor,
        plugin_host: PluginHost,
    ) -> AgentOut:
        agent = await agents.set_status(actor, company_id, agent_id, AgentStatus.ACTIVE)
        return AgentOut.of(agent, plugin_host.providers())

    @post(
        "/{agent_id:uuid}/wakeup",
        opt=access(Access.WRITE),
        responses={
            200: ResponseSpec(
                data_container=WakeRequestOut,
                description="folded into a queued wake, or the idempotency key's first answer",
                generate_examples=False,
            ),
            **error_responses(404, 409),
        },
        description="Queue a wake. 201: created; 200: coalesced into a queued wake, or the "
        "idempotency key was seen before (``deduplicated``).",
    )
    async def wake_agent(
        self,
        company_id: uuid.UUID,
        agent_id: uuid.UUID,
        data: WakeupCreate,
        wakes: WakeService,
        actor: Actor,
    ) -> Response[WakeRequestOut]:
        outcome = await wakes.wake_agent(
            actor,
            company_id,
            agent_id,
            issue_id=data.issue_id,
            reason=data.reason,
            payload=data.payload,
            idempotency_key=data.idempotency_key,
        )
        return Response(
            WakeRequestOut.of(outcome.wake, deduplicated=outcome.deduplicated),
            status_code=HTTP_201_CREATED if outcome.created else HTTP_200_OK,
        )
