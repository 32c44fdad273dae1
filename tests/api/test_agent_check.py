"""``GET /api/providers`` (each kind's config schema) and ``POST …/agents/{id}/check``.

The check is answered from the plugin host and from what connected runners
said (``runners.offers``); here runner rows stand for what runners said, and
``tests/engine/test_agent_check_live.py`` has a real runner say it.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import delete, update

from paperclip.models import Agent, Runner
from tests.support.fixture_provider import CONFIG_SCHEMA


@pytest.fixture(autouse=True)
async def no_runner(paperclip_container):
    """Runners are the instance's, and the module shares its database: each test starts bare."""
    async with paperclip_container.sessions().begin() as session:
        await session.execute(delete(Runner))


async def connected_runner(container, name: str, offers: dict | None) -> None:
    async with container.sessions().begin() as session:
        session.add(
            Runner(
                id=uuid.uuid4(),
                name=name,
                credential_hash=uuid.uuid4().hex,
                instance=f"{name}:1:abcd",
                replica="replica-0",
                offers=offers,
            )
        )


def offers(profiles=("default",), found=True, **probe) -> dict:
    return {
        "providers": ["fixture"],
        "launch_profiles": {"fixture": list(profiles)},
        "probes": [
            {"provider": "fixture", "profile": p, "found": found, "version": "3.11", **probe}
            for p in profiles
        ],
    }


async def check(client, company, agent) -> dict:
    r = await client.post(f"/api/companies/{company['id']}/agents/{agent['id']}/check")
    assert r.status_code == 200, r.text
    return r.json()


def verdicts(result: dict) -> dict[str, str]:
    return {c["name"]: c["status"] for c in result["checks"]}


async def test_providers_list_each_kind_with_its_config_schema(paperclip_client):
    r = await paperclip_client.get("/api/providers")
    assert r.status_code == 200, r.text
    [fixture] = [p for p in r.json()["items"] if p["name"] == "fixture"]
    schema = fixture["config_schema"]
    assert schema["properties"]["model"] == CONFIG_SCHEMA["properties"]["model"]
    assert schema["properties"]["launch"]["type"] == "string"  # the core's key, added
    assert "$schema" not in schema
    assert fixture["launch_profiles"] and fixture["capabilities"]["steer"] in (True, False)


async def test_without_a_runner_the_check_says_so(paperclip_client, company, agent):
    result = await check(paperclip_client, company, agent)
    assert result["ok"] is False
    assert verdicts(result) == {
        "provider_installed": "ok",
        "config_valid": "ok",
        "agent_active": "ok",
        "runner_connected": "failed",
    }
    [failed] = [c for c in result["checks"] if c["status"] == "failed"]
    assert failed["code"] == "no_runner" and "paperclip serve" in failed["message"]
    assert result["launch_profile"] == "default" and result["runners"] == []


async def test_a_runner_offering_the_profile_with_its_cli_passes(
    paperclip_client, paperclip_container, company, agent
):
    await connected_runner(paperclip_container, "build-1", offers())
    result = await check(paperclip_client, company, agent)
    assert result["ok"] is True, result
    assert set(verdicts(result).values()) == {"ok"}
    assert result["runners"] == [
        {
            "runner": "build-1",
            "hosts_provider": True,
            "launch_profiles": ["default"],
            "cli_found": True,
            "cli_version": "3.11",
            "hint": "",
        }
    ]


@pytest.mark.parametrize(
    ("said", "check_name", "status", "code"),
    [
        (
            {"providers": ["other"], "launch_profiles": {}},
            "runner_connected",
            "failed",
            "provider_not_installed",
        ),
        (offers(profiles=("fast",)), "launch_profile_offered", "failed", "launch_not_allowed"),
        ({"providers": ["fixture"]}, "launch_profile_offered", "unknown", None),
        (
            offers(found=False, hint="install it"),
            "cli_installed",
            "failed",
            "provider_spawn_failed",
        ),
        (
            {"providers": ["fixture"], "launch_profiles": {"fixture": ["default"]}},
            "cli_installed",
            "unknown",
            None,
        ),
    ],
    ids=["not-hosted", "profile-not-offered", "older-runner", "cli-missing", "not-probed-yet"],
)
async def test_what_a_runner_lacks_is_named(
    paperclip_client, paperclip_container, company, agent, said, check_name, status, code
):
    await connected_runner(paperclip_container, "build-2", said)
    result = await check(paperclip_client, company, agent)
    [found] = [c for c in result["checks"] if c["name"] == check_name]
    assert (found["status"], found["code"]) == (status, code), result
    assert result["ok"] is (status != "failed")
    if check_name == "cli_installed" and status == "failed":
        assert "install it" in found["message"]


async def test_a_runner_gone_or_revoked_does_not_count(
    paperclip_client, paperclip_container, company, agent
):
    await connected_runner(paperclip_container, "gone", offers())
    async with paperclip_container.sessions().begin() as session:
        await session.execute(update(Runner).values(replica=None))
    result = await check(paperclip_client, company, agent)
    assert verdicts(result)["runner_connected"] == "failed"


async def test_a_stale_config_and_a_paused_agent_are_reported(
    paperclip_client, paperclip_container, company, agent
):
    await connected_runner(paperclip_container, "build-3", offers())
    # A config saved before the plugin's schema changed: the API refuses it now.
    async with paperclip_container.sessions().begin() as session:
        await session.execute(
            update(Agent)
            .where(Agent.id == uuid.UUID(agent["id"]))
            .values(provider_config={"model": "m", "temperature": 9})
        )
    await paperclip_client.post(f"/api/companies/{company['id']}/agents/{agent['id']}/pause")
    result = await check(paperclip_client, company, agent)
    [config] = [c for c in result["checks"] if c["name"] == "config_valid"]
    assert (config["status"], config["code"]) == ("failed", "invalid_provider_config")
    assert "temperature" in config["message"]
    assert verdicts(result)["agent_active"] == "warning"
    assert result["ok"] is False


async def test_another_companys_agent_is_not_found(paperclip_client, company, agent):
    other = (await paperclip_client.post("/api/companies", json={"name": "Other"})).json()
    r = await paperclip_client.post(f"/api/companies/{other['id']}/agents/{agent['id']}/check")
    assert r.status_code == 404 and r.json()["code"] == "agent_not_found"
