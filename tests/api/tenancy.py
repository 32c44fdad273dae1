"""Two companies full of rows, and every route of the app, for the tenancy tests.

The routes come from the app itself (``app.routes``), not from a list here or
from the OpenAPI document, so a new route is walked without touching the
tests; a route whose ids or body the walk cannot fill fails them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import func, select, text

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.http.access import Access, route_access
from paperclip.models import Base, KeyRole, Run, RunEvent

# A valid body for every route that takes one (the walk fails on a route missing here).
BODIES = {
    ("POST", "/api/companies"): {"name": "n"},
    ("POST", "/api/companies/{company_id}/agents"): {"name": "n", "provider": "fixture"},
    ("POST", "/api/companies/{company_id}/issues"): {"title": "t"},
    ("POST", "/api/companies/{company_id}/projects"): {"name": "n", "repo_path": "/srv/n"},
    ("PATCH", "/api/companies/{company_id}/projects/{project_id}"): {"description": "x"},
    ("PATCH", "/api/companies/{company_id}/agents/{agent_id}"): {"role": "x"},
    ("PATCH", "/api/companies/{company_id}/issues/{issue_id}"): {"title": "x"},
    ("POST", "/api/companies/{company_id}/issues/{issue_id}/comments"): {"body": "x"},
    ("POST", "/api/companies/{company_id}/issues/{issue_id}/workspace/merge"): {
        "close_issue": False
    },
    ("PATCH", "/api/companies/{company_id}/issues/{issue_id}/comments/{comment_id}"): {"body": "x"},
    ("POST", "/api/companies/{company_id}/agents/{agent_id}/wakeup"): {"reason": "r"},
    ("PATCH", "/api/companies/{company_id}"): {"name": "x"},
    ("POST", "/api/companies/{company_id}/api-keys"): {"name": "k", "role": "viewer"},
    ("POST", "/api/companies/{company_id}/holds"): {
        "issue_id": "00000000-0000-4000-8000-000000000000",
        "reason": "r",
    },
    ("POST", "/api/companies/{company_id}/holds/{hold_id}/resolve"): {"resolution": "released"},
    ("POST", "/api/companies/{company_id}/runs/{run_id}/steer"): {
        "comment_id": "00000000-0000-4000-8000-000000000000"
    },
    ("POST", "/api/companies/{company_id}/conversations"): {
        "issue_id": "00000000-0000-4000-8000-000000000000",
        "agent_id": "00000000-0000-4000-8000-000000000000",
    },
    ("POST", "/api/companies/{company_id}/conversations/{conversation_id}/messages"): {"body": "x"},
    ("POST", "/api/companies/{company_id}/issues/{issue_id}/interactions"): {
        "kind": "approval",
        "title": "t",
    },
    ("POST", "/api/companies/{company_id}/interactions/{interaction_id}/actions"): {
        "action": "approve"
    },
    ("POST", "/api/companies/{company_id}/budgets"): {
        "scope": "company",
        "monthly_limit_micros": 1,
    },
    ("PATCH", "/api/companies/{company_id}/budgets/{budget_id}"): {"monthly_limit_micros": 2},
    ("PUT", "/api/prices/{model}"): {"input_per_million_micros": 1},
    ("POST", "/api/companies/{company_id}/routines"): {
        "name": "n",
        "agent_id": "00000000-0000-4000-8000-000000000000",
        "title": "t",
    },
    ("PATCH", "/api/companies/{company_id}/routines/{routine_id}"): {"title": "x"},
    ("POST", "/api/companies/{company_id}/routines/{routine_id}/run"): {},
}

# Ids of company B that may appear in a body or query of a company-A route.
REFERENCES = {
    ("POST", "/api/companies/{company_id}/issues"): [
        {"json": {"title": "t", "assignee_agent_id": "{agent_id}"}},
        {"json": {"title": "t", "parent_id": "{issue_id}"}},
        {"json": {"title": "t", "project_id": "{project_id}"}},
    ],
    ("PATCH", "/api/companies/{company_id}/issues/{issue_id}"): [
        {"json": {"assignee_agent_id": "{agent_id}"}},
        {"json": {"parent_id": "{issue_id}"}},
        {"json": {"project_id": "{project_id}"}},
    ],
    ("POST", "/api/companies/{company_id}/agents"): [
        {"json": {"name": "n", "provider": "fixture", "default_project_id": "{project_id}"}},
    ],
    ("PATCH", "/api/companies/{company_id}/agents/{agent_id}"): [
        {"json": {"default_project_id": "{project_id}"}},
    ],
    ("POST", "/api/companies/{company_id}/agents/{agent_id}/wakeup"): [
        {"json": {"issue_id": "{issue_id}"}},
    ],
    ("GET", "/api/companies/{company_id}/issues"): [
        {"params": {"assignee_agent_id": "{agent_id}"}},
        {"params": {"parent_id": "{issue_id}"}},
        {"params": {"project_id": "{project_id}"}},
    ],
    ("GET", "/api/companies/{company_id}/runs"): [
        {"params": {"agent_id": "{agent_id}"}},
        {"params": {"issue_id": "{issue_id}"}},
    ],
    ("GET", "/api/companies/{company_id}/holds"): [
        {"params": {"issue_id": "{issue_id}"}},
    ],
    ("POST", "/api/companies/{company_id}/holds"): [
        {"json": {"issue_id": "{issue_id}", "reason": "r"}},
    ],
    ("POST", "/api/companies/{company_id}/runs/{run_id}/steer"): [
        {"json": {"comment_id": "{comment_id}"}},
    ],
    ("GET", "/api/companies/{company_id}/conversations"): [
        {"params": {"issue_id": "{issue_id}"}},
    ],
    ("POST", "/api/companies/{company_id}/conversations"): [
        {"json": {"issue_id": "{issue_id}", "agent_id": "{agent_id}"}},
    ],
    ("POST", "/api/companies/{company_id}/issues/{issue_id}/interactions"): [
        {"json": {"kind": "approval", "title": "t", "conversation_id": "{conversation_id}"}},
    ],
    ("POST", "/api/companies/{company_id}/budgets"): [
        {"json": {"scope": "agent", "scope_id": "{agent_id}", "monthly_limit_micros": 1}},
        {"json": {"scope": "project", "scope_id": "{project_id}", "monthly_limit_micros": 1}},
    ],
    ("GET", "/api/companies/{company_id}/costs"): [
        {"params": {"agent_id": "{agent_id}"}},
        {"params": {"project_id": "{project_id}"}},
        {"params": {"issue_id": "{issue_id}"}},
        {"params": {"run_id": "{run_id}"}},
    ],
    ("GET", "/api/companies/{company_id}/cost-events"): [
        {"params": {"agent_id": "{agent_id}"}},
        {"params": {"run_id": "{run_id}"}},
    ],
    ("POST", "/api/companies/{company_id}/routines"): [
        {"json": {"name": "n", "agent_id": "{agent_id}", "title": "t"}},
        {
            "json": {
                "name": "n",
                "agent_id": "{agent_id}",
                "title": "t",
                "project_id": "{project_id}",
            }
        },
    ],
    ("PATCH", "/api/companies/{company_id}/routines/{routine_id}"): [
        {"json": {"agent_id": "{agent_id}"}},
        {"json": {"project_id": "{project_id}"}},
    ],
}


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    """With ``{name}`` placeholders, as in the OpenAPI document."""
    access: Access | None
    takes_body: bool

    @property
    def names(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    def url(self, values: dict[str, str]) -> str:
        return self.path.format(**values)


def http_routes(app) -> Iterator[Route]:
    """Every (method, path) the app serves, but Litestar's automatic OPTIONS answers."""
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            for method in sorted(handler.http_methods):
                if method == "OPTIONS":
                    continue
                yield Route(
                    method,
                    route.path_format,
                    route_access(handler),
                    "data" in handler.parsed_fn_signature.parameters,
                )


async def make_company(client, container, name: str) -> dict[str, str]:
    """A company with a project, an agent, an issue, a comment, a run with an event, a routine
    and a key."""
    company = (await client.post("/api/companies", json={"name": name})).json()
    cid = company["id"]
    project = (
        await client.post(
            f"/api/companies/{cid}/projects",
            json={"name": f"{name} project", "repo_path": f"/srv/{name}"},
        )
    ).json()
    agent = (
        await client.post(
            f"/api/companies/{cid}/agents",
            json={"name": "ag", "provider": "fixture", "default_project_id": project["id"]},
        )
    ).json()
    issue = (
        await client.post(
            f"/api/companies/{cid}/issues",
            json={"title": f"{name} secret", "assignee_agent_id": agent["id"]},
        )
    ).json()
    assert issue["project_id"] == project["id"]  # the assignee's default project
    comment = (
        await client.post(
            f"/api/companies/{cid}/issues/{issue['id']}/comments", json={"body": f"{name} body"}
        )
    ).json()
    async with container.sessions().begin() as session:
        run = Run(
            id=uuid.uuid4(),
            company_id=uuid.UUID(cid),
            agent_id=uuid.UUID(agent["id"]),
            issue_id=uuid.UUID(issue["id"]),
            provider="fixture",
            status="running",
        )
        session.add(run)
        await session.flush()
        session.add(
            RunEvent(
                company_id=run.company_id,
                run_id=run.id,
                seq=1,
                type="turn/started",
                source_instance="test",
                source_seq=1,
            )
        )
    hold = await container.holds().create(
        LOCAL_OPERATOR, uuid.UUID(cid), issue_id=uuid.UUID(issue["id"]), reason=f"{name} hold"
    )
    conversation = (
        await client.post(
            f"/api/companies/{cid}/conversations",
            json={"issue_id": issue["id"], "agent_id": agent["id"]},
        )
    ).json()
    interaction = (
        await client.post(
            f"/api/companies/{cid}/issues/{issue['id']}/interactions",
            json={"kind": "approval", "title": f"{name} approval"},
        )
    ).json()
    budget = (
        await client.post(
            f"/api/companies/{cid}/budgets",
            json={"scope": "agent", "scope_id": agent["id"], "monthly_limit_micros": 10**9},
        )
    ).json()
    routine = (
        await client.post(
            f"/api/companies/{cid}/routines",
            json={"name": f"{name} routine", "agent_id": agent["id"], "title": f"{name} report"},
        )
    ).json()
    key, _ = await container.api_keys().create(
        f"{name} key", company_id=uuid.UUID(cid), role=KeyRole.VIEWER
    )
    return {
        "company_id": cid,
        "agent_id": agent["id"],
        "issue_id": issue["id"],
        "project_id": project["id"],
        "comment_id": comment["id"],
        "run_id": str(run.id),
        "hold_id": str(hold.id),
        "conversation_id": conversation["id"],
        "interaction_id": interaction["id"],
        "routine_id": routine["id"],
        "key_id": str(key.id),
        "budget_id": budget["id"],
        "model": "tenancy-model",
        "name": name,
    }


async def table_fingerprint(container) -> dict[str, object]:
    """Row counts of every table and the latest update: equal before and after means no write."""
    async with container.sessions()() as session:
        counts: dict[str, object] = {}
        for table in Base.metadata.tables.values():
            counts[table.name] = (
                await session.execute(select(func.count()).select_from(table))
            ).scalar()
        for table in ("companies", "agents", "issues"):
            counts[f"{table}.updated_at"] = str(
                (await session.execute(text(f"SELECT max(updated_at) FROM {table}"))).scalar()
            )
        counts["api_keys.revoked"] = (
            await session.execute(text("SELECT count(revoked_at) FROM api_keys"))
        ).scalar()
        return counts


def fill_reference(variant: dict, b: dict[str, str]) -> dict:
    return {
        kind: {f: (v.format(**b) if isinstance(v, str) else v) for f, v in payload.items()}
        for kind, payload in variant.items()
    }
