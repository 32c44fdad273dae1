"""``GET /api/metrics``: Prometheus' text, the instance's figures, for its operator only."""

from __future__ import annotations

import uuid

import httpx
from prometheus_client.parser import text_string_to_metric_families

from paperclip.app import create_app
from paperclip.common.actor import SYSTEM
from paperclip.models import KeyRole
from paperclip.settings import DeploymentMode
from paperclip.testing import running_lifespan


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def make_assigned_issue(client, name: str) -> dict[str, str]:
    company = (await client.post("/api/companies", json={"name": name})).json()
    base = f"/api/companies/{company['id']}"
    agent = await client.post(
        f"{base}/agents", json={"name": "coder", "provider": "fixture", "provider_config": {}}
    )
    assert agent.status_code == 201, agent.text
    issue = await client.post(
        f"{base}/issues",
        json={"title": f"{name} secret task", "assignee_agent_id": agent.json()["id"]},
    )
    assert issue.status_code == 201, issue.text
    return {"company": company["id"], "issue": issue.json()["id"], "agent": agent.json()["id"]}


async def test_the_local_operator_reads_the_instance_figures_and_no_company(paperclip_client):
    before = samples((await paperclip_client.get("/api/metrics")).text)
    made = [await make_assigned_issue(paperclip_client, n) for n in ("Alpha", "Bravo")]

    r = await paperclip_client.get("/api/metrics")

    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=")
    after = samples(r.text)
    # No runner is connected: the two assignments' wakes wait.
    assert after[("paperclip_wakes_queued", ())] == before[("paperclip_wakes_queued", ())] + 2
    assert after[("paperclip_database_up", ())] == 1
    assert after[("paperclip_runners_connected", ())] == 0
    for family in (
        "paperclip_journal_pending",
        "paperclip_runner_outbox",
        "paperclip_database_pool_connections",
    ):
        assert any(name == family for name, _ in after), family
    assert ("paperclip_tokens_total", (("kind", "output"),)) in after
    pools = {dict(labels)["pool"] for name, labels in after if name.endswith("pool_connections")}
    assert pools == {"main", "journal", "numbers"}
    # Figures of the whole instance: no company, issue or agent is named.
    for ids in made:
        for value in ids.values():
            assert value not in r.text
    assert "Alpha" not in r.text and "secret task" not in r.text


async def test_only_an_instance_admin_key_reads_them_with_login(
    paperclip_settings, paperclip_container, paperclip_plugin_host, fixture_kind
):
    app = create_app(
        paperclip_settings.model_copy(update={"deployment_mode": DeploymentMode.AUTHENTICATED}),
        paperclip_plugin_host,
        container=paperclip_container,
    )
    keys = paperclip_container.api_keys()
    _, root = await keys.create(f"root {uuid.uuid4()}")
    company = await paperclip_container.companies().create(
        SYSTEM, name=f"Co {uuid.uuid4()}", issue_prefix=None
    )
    _, admin = await keys.create("co admin", company_id=company.id, role=KeyRole.ADMIN)
    async with running_lifespan(app):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as client:
            anonymous = await client.get("/api/metrics")
            company_admin = await client.get(
                "/api/metrics", headers={"authorization": f"Bearer {admin}"}
            )
            operator = await client.get("/api/metrics", headers={"authorization": f"Bearer {root}"})
    assert anonymous.status_code == 401 and anonymous.json()["code"]
    assert company_admin.status_code == 403
    assert company_admin.json()["code"] == "instance_admin_required"
    assert operator.status_code == 200
    assert ("paperclip_database_up", ()) in samples(operator.text)
