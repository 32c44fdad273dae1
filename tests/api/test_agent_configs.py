"""An agent's provider and config are checked when it is made or changed (422, naming the field)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from paperclip.models import Agent


async def agents_count(container):
    async with container.sessions()() as session:
        return (await session.execute(select(func.count()).select_from(Agent))).scalar()


async def test_a_provider_no_plugin_offers_is_refused(
    paperclip_client, company, paperclip_container
):
    before = await agents_count(paperclip_container)
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/agents", json={"name": "x", "provider": "nonesuch"}
    )
    assert r.status_code == 422 and r.json()["code"] == "unknown_provider"
    assert r.json()["details"][0]["field"] == "provider"
    assert "fixture" in r.json()["message"]  # what is installed
    assert await agents_count(paperclip_container) == before


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"modle": "m"}, "provider_config"),  # a misspelt key
        ({"model": 5}, "provider_config.model"),
        ({"temperature": 9}, "provider_config.temperature"),
        # What the attack asked for: an executable in the agent's config.
        ({"command": ["/bin/sh", "-c", "id"]}, "provider_config"),
    ],
)
async def test_the_provider_schema_refuses_a_config(
    paperclip_client, company, paperclip_container, config, field
):
    before = await agents_count(paperclip_container)
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/agents",
        json={"name": "x", "provider": "fixture", "provider_config": config},
    )
    assert r.status_code == 422 and r.json()["code"] == "invalid_provider_config", r.text
    assert r.json()["details"][0]["field"] == field
    assert await agents_count(paperclip_container) == before


@pytest.mark.parametrize(
    "launch",
    [["/bin/sh", "-c", "touch /tmp/pwned"], {"argv": ["/bin/sh"]}, "../../bin/sh", 1, "", None],
)
async def test_launch_names_a_profile_never_a_command(paperclip_client, company, launch):
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/agents",
        json={"name": "x", "provider": "fixture", "provider_config": {"launch": launch}},
    )
    assert r.status_code == 422 and r.json()["code"] == "invalid_launch_profile"
    assert r.json()["details"][0]["field"] == "provider_config.launch"


async def test_a_profile_name_is_accepted(paperclip_client, company):
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/agents",
        json={"name": "x", "provider": "fixture", "provider_config": {"launch": "second"}},
    )
    assert r.status_code == 201 and r.json()["provider_config"] == {"launch": "second"}


async def test_changes_are_checked_too_and_write_nothing(paperclip_client, company, agent):
    url = f"/api/companies/{company['id']}/agents/{agent['id']}"
    for body, code in (
        ({"provider": "nonesuch"}, "unknown_provider"),
        ({"provider_config": {"model": 1}}, "invalid_provider_config"),
        ({"provider_config": {"launch": ["sh"]}, "role": "x"}, "invalid_launch_profile"),
    ):
        r = await paperclip_client.patch(url, json=body)
        assert r.status_code == 422 and r.json()["code"] == code
    assert (await paperclip_client.get(url)).json() == agent
