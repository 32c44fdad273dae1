from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _providers(fixture_kind):
    """Agents of these tests use the ``fixture`` provider kind."""


@pytest.fixture
async def company(paperclip_client):
    r = await paperclip_client.post(
        "/api/companies", json={"name": "Paperclip", "issue_prefix": "PAP"}
    )
    assert r.status_code == 201
    return r.json()


@pytest.fixture
async def agent(paperclip_client, company):
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/agents",
        json={
            "name": "coder",
            "provider": "fixture",
            "role": "engineer",
            "provider_config": {"model": "m"},
        },
    )
    assert r.status_code == 201, r.text
    return r.json()
