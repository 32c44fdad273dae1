"""Every route, called with company A in the path and company B's ids: 404, nothing leaked, nothing written.

The routes come from the OpenAPI schema, so a new route is walked without
touching this test; a route whose ids the walk cannot fill fails it.
"""

from __future__ import annotations

import re
import uuid

import pytest
from sqlalchemy import func, select, text

from paperclip.models import Base, Run, RunEvent

BODIES = {
    ("post", "/api/companies/{company_id}/agents"): {"name": "n", "provider": "fixture"},
    ("post", "/api/companies/{company_id}/issues"): {"title": "t"},
    ("patch", "/api/companies/{company_id}/agents/{agent_id}"): {"role": "x"},
    ("patch", "/api/companies/{company_id}/issues/{issue_id}"): {"title": "x"},
    ("post", "/api/companies/{company_id}/issues/{issue_id}/comments"): {"body": "x"},
    ("patch", "/api/companies/{company_id}/issues/{issue_id}/comments/{comment_id}"): {"body": "x"},
    ("post", "/api/companies/{company_id}/agents/{agent_id}/wakeup"): {"reason": "r"},
    ("patch", "/api/companies/{company_id}"): {"name": "x"},
}

# Ids of company B that may appear in a body or query of a company-A route.
REFERENCES = {
    ("post", "/api/companies/{company_id}/issues"): [
        ({"json": {"title": "t", "assignee_agent_id": "{agent_id}"}}),
        ({"json": {"title": "t", "parent_id": "{issue_id}"}}),
    ],
    ("patch", "/api/companies/{company_id}/issues/{issue_id}"): [
        ({"json": {"assignee_agent_id": "{agent_id}"}}),
        ({"json": {"parent_id": "{issue_id}"}}),
    ],
    ("post", "/api/companies/{company_id}/agents/{agent_id}/wakeup"): [
        ({"json": {"issue_id": "{issue_id}"}}),
    ],
    ("get", "/api/companies/{company_id}/issues"): [
        ({"params": {"assignee_agent_id": "{agent_id}"}}),
        ({"params": {"parent_id": "{issue_id}"}}),
    ],
    ("get", "/api/companies/{company_id}/runs"): [
        ({"params": {"agent_id": "{agent_id}"}}),
        ({"params": {"issue_id": "{issue_id}"}}),
    ],
}


async def make_company(client, container, name):
    company = (await client.post("/api/companies", json={"name": name})).json()
    cid = company["id"]
    agent = (
        await client.post(f"/api/companies/{cid}/agents", json={"name": "ag", "provider": "fixture"})
    ).json()
    issue = (
        await client.post(
            f"/api/companies/{cid}/issues",
            json={"title": f"{name} secret", "assignee_agent_id": agent["id"]},
        )
    ).json()
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
            provider="codex",
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
    return {
        "company_id": cid,
        "agent_id": agent["id"],
        "issue_id": issue["id"],
        "comment_id": comment["id"],
        "run_id": str(run.id),
        "name": name,
    }


async def table_fingerprint(container):
    async with container.sessions()() as session:
        counts = {}
        for table in Base.metadata.sorted_tables:
            counts[table.name] = (
                await session.execute(select(func.count()).select_from(table))
            ).scalar()
        counts["max_updated"] = str(
            (await session.execute(text("SELECT max(updated_at) FROM issues"))).scalar()
        )
        return counts


def routes(app):
    schema = app.openapi_schema.to_schema()
    for path, item in schema["paths"].items():
        for method in item:
            yield method, path


async def test_every_route_refuses_foreign_ids(client, app, container):
    a = await make_company(client, container, "Alpha")
    b = await make_company(client, container, "Bravo")
    before = await table_fingerprint(container)
    walked = 0
    for method, path in routes(app):
        names = re.findall(r"{(\w+)}", path)
        if "company_id" not in names or names == ["company_id"]:
            continue  # instance-wide routes, or routes that take only the company (below)
        values = {n: b[n] for n in names} | {"company_id": a["company_id"]}
        url = path.format(**values)
        body = BODIES.get((method, path))
        r = await client.request(method.upper(), url, json=body)
        assert r.status_code == 404, (method, url, r.status_code, r.text)
        assert r.json()["code"].endswith("not_found")
        assert "Bravo" not in r.text
        walked += 1
    assert walked >= 15

    for (method, path), variants in REFERENCES.items():
        for variant in variants:
            values = {
                "company_id": a["company_id"],
                "agent_id": a["agent_id"],
                "issue_id": a["issue_id"],
            }
            url = path.format(**values)
            kwargs = {
                k: {f: (v.format(**b) if isinstance(v, str) else v) for f, v in payload.items()}
                for k, payload in variant.items()
            }
            r = await client.request(method.upper(), url, **kwargs)
            assert r.status_code == 404, (method, url, kwargs, r.text)
            assert "Bravo" not in r.text

    assert await table_fingerprint(container) == before


@pytest.mark.parametrize("resource", ["agents", "issues", "runs"])
async def test_lists_show_only_the_company_own_rows(client, container, resource):
    a = await make_company(client, container, "Alpha")
    b = await make_company(client, container, "Bravo")
    items = (await client.get(f"/api/companies/{a['company_id']}/{resource}")).json()["items"]
    assert items and all(i["company_id"] == a["company_id"] for i in items)
    assert b["company_id"] not in str(items)
    comments = (
        await client.get(f"/api/companies/{a['company_id']}/issues/{a['issue_id']}/comments")
    ).json()["items"]
    assert [c["body"] for c in comments] == ["Alpha body"]
