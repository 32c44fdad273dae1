"""The org chart of a company: its agents as a tree, each with what it is doing now."""

from __future__ import annotations

import uuid

import msgspec
from litestar import Controller, get

from paperclip.domain.agents.agents import AgentService
from paperclip.domain.agents.schemas import AgentOut
from paperclip.http.access import Access, access
from paperclip.http.errors import error_responses
from paperclip.plugin_host import PluginHost


class OrgNodeOut(msgspec.Struct):
    agent: AgentOut
    depth: int
    """0 at the top; each agent comes right after its manager and the agents above it."""
    active_runs: int
    """Runs of the agent queued or running now."""


class OrgChart(msgspec.Struct):
    agents: list[OrgNodeOut]


class OrgChartController(Controller):
    path = "/companies/{company_id:uuid}/org-chart"
    tags = ["agents"]

    @get("/", opt=access(Access.READ), responses=error_responses(404))
    async def org_chart(
        self, company_id: uuid.UUID, agents: AgentService, plugin_host: PluginHost
    ) -> OrgChart:
        """Every agent of the company, depth first: the top ones (no manager) in name order,
        each followed by the agents that report to it."""
        kinds = plugin_host.providers()
        nodes = await agents.org_chart(company_id)
        return OrgChart(
            [OrgNodeOut(AgentOut.of(n.agent, kinds), n.depth, n.active_runs) for n in nodes]
        )
