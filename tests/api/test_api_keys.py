"""A company's keys over the API: named, unique, shown once, revoked once."""

from __future__ import annotations

import uuid

import httpx
import pytest

from paperclip.app import create_app
from paperclip.settings import DeploymentMode
from paperclip.testing import running_lifespan


@pytest.fixture
async def authed(paperclip_settings, paperclip_container, paperclip_plugin_host):
    app = create_app(
        paperclip_settings.model_copy(update={"deployment_mode": DeploymentMode.AUTHENTICATED}),
        paperclip_plugin_host,
        container=paperclip_container,
    )
    _, root = await paperclip_container.api_keys().create(f"root {uuid.uuid4()}")
    async with running_lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://127.0.0.1",
            headers={"authorization": f"Bearer {root}"},
        ) as client:
            company = (await client.post("/api/companies", json={"name": "Keys"})).json()
            yield client, f"/api/companies/{company['id']}/api-keys"


async def test_a_key_is_shown_once_and_works_for_its_company(authed):
    client, base = authed
    r = await client.post(base, json={"name": "ci", "role": "member"})
    assert r.status_code == 201
    created = r.json()
    secret = created["key"]
    assert secret.startswith("pck_") and created["api_key"]["role"] == "member"
    listed = (await client.get(base)).json()
    assert [k["name"] for k in listed["items"]] == ["ci"]
    assert secret not in str(listed)
    company_url = base.removesuffix("/api-keys")
    r = await client.get(company_url, headers={"authorization": f"Bearer {secret}"})
    assert r.status_code == 200


@pytest.mark.parametrize("name", ["", "   ", "tab\there", "x" * 201])
async def test_a_key_needs_a_name(authed, name):
    client, base = authed
    r = await client.post(base, json={"name": name})
    assert r.status_code == 400 and r.json()["details"][0]["field"] == "name"


async def test_names_are_unique_among_live_keys(authed):
    client, base = authed
    first = (await client.post(base, json={"name": "deploy"})).json()
    r = await client.post(base, json={"name": "deploy", "role": "viewer"})
    assert r.status_code == 409 and r.json()["code"] == "api_key_name_taken"
    assert r.json()["details"][0]["field"] == "name"
    await client.post(f"{base}/{first['api_key']['id']}/revoke")
    # A revoked key's name is free again; the revoked key stays listed.
    assert (await client.post(base, json={"name": "deploy"})).status_code == 201


async def test_revoking_twice_says_so(authed):
    client, base = authed
    created = (await client.post(base, json={"name": "once"})).json()
    url = f"{base}/{created['api_key']['id']}/revoke"
    r = await client.post(url)
    assert r.status_code == 200 and r.json()["revoked_at"]
    again = await client.post(url)
    assert again.status_code == 409 and again.json()["code"] == "api_key_already_revoked"
    refused = await client.get(
        base.removesuffix("/api-keys"), headers={"authorization": f"Bearer {created['key']}"}
    )
    assert refused.status_code == 401 and refused.json()["code"] == "invalid_api_key"


async def test_the_api_makes_no_instance_admin_key(authed):
    client, base = authed
    r = await client.post(base, json={"name": "root", "role": "instance_admin"})
    assert r.status_code == 400 and r.json()["details"][0]["field"] == "role"


async def test_another_company_key_is_not_found_here(authed):
    client, base = authed
    other = (await client.post("/api/companies", json={"name": "Other"})).json()
    theirs = (
        await client.post(f"/api/companies/{other['id']}/api-keys", json={"name": "theirs"})
    ).json()
    r = await client.post(f"{base}/{theirs['api_key']['id']}/revoke")
    assert r.status_code == 404 and r.json()["code"] == "api_key_not_found"
