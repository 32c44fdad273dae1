"""Routines over HTTP: make and change them (422s naming the field, nothing written), run one
now, the signed webhook (one execution however often a key comes, 401 for a bad signature),
a disabled routine's 409, the executions' pages, and agents' heartbeat_seconds."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from sqlalchemy import func, select

from paperclip.domain.routines.routine_secrets import signature
from paperclip.models import Issue, Routine, RoutineExecution, WakeRequest


async def counts(container) -> tuple[int, ...]:
    found = []
    async with container.sessions()() as session:
        for model in (Routine, RoutineExecution, Issue, WakeRequest):
            found.append((await session.execute(select(func.count()).select_from(model))).scalar())
    return tuple(found)


@pytest.fixture
async def routine(paperclip_client, company, agent):
    """A routine with a webhook and a schedule far away (once a year): it fires only when told."""
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/routines",
        json={
            "name": "Dependency update",
            "agent_id": agent["id"],
            "title": "Update dependencies ({{trigger}} {{date}})",
            "description": "Bump what is outdated.",
            "cron": "0 3 1 1 *",
            "timezone": "Europe/Paris",
            "webhook": True,
        },
    )
    assert r.status_code == 201, r.text
    return r.json()


def signed(secret: str, payload: dict, key: str | None = "delivery-1") -> dict:
    body = json.dumps(payload).encode()
    headers = {"content-type": "application/json", "x-paperclip-signature": signature(secret, body)}
    if key is not None:
        headers["idempotency-key"] = key
    return {"content": body, "headers": headers}


async def test_a_routine_is_made_its_secret_shown_once_and_its_next_runs_listed(
    paperclip_client, company, routine
):
    assert routine["webhook_secret"].startswith("pcwh_")
    assert routine["webhook"] and routine["webhook_path"].endswith(
        f"/routines/{routine['id']}/webhook"
    )
    assert routine["cron"] == "0 3 1 1 *" and len(routine["next_runs"]) == 5
    assert routine["next_runs"][0].endswith("T02:00:00Z")  # 03:00 in Paris in January
    base = f"/api/companies/{company['id']}/routines"
    shown = (await paperclip_client.get(f"{base}/{routine['id']}")).json()
    assert shown["webhook_secret"] is None
    listed = (await paperclip_client.get(base)).json()
    assert [r["id"] for r in listed["items"]] == [routine["id"]]

    r = await paperclip_client.patch(
        f"{base}/{routine['id']}", json={"cron": "30  8 * * 1-5", "timezone": "UTC"}
    )
    assert r.status_code == 200 and r.json()["cron"] == "30 8 * * 1-5"
    assert r.json()["next_slot_at"] is None  # the scheduler starts it from its clock
    assert r.json()["webhook_secret"] is None

    assert (await paperclip_client.delete(f"{base}/{routine['id']}")).status_code == 204
    assert (await paperclip_client.get(f"{base}/{routine['id']}")).status_code == 404


@pytest.mark.parametrize(
    ("fields", "code", "field"),
    [
        ({"cron": "every morning"}, "invalid_cron", "cron"),
        ({"cron": "0 9 * * * *"}, "invalid_cron", "cron"),
        ({"cron": "0 9 * * *", "timezone": "Europe/Atlantis"}, "unknown_timezone", "timezone"),
        ({"title": "Report {{today}}"}, "unknown_placeholder", "title"),
        ({"description": "{{slot}}"}, "unknown_placeholder", "description"),
        ({"agent_id": str(uuid.uuid4())}, "agent_not_found", "agent_id"),
        ({"project_id": str(uuid.uuid4())}, "project_not_found", "project_id"),
    ],
)
async def test_bad_input_is_a_422_naming_the_field_and_writes_nothing(
    paperclip_client, paperclip_container, company, agent, routine, fields, code, field
):
    before = await counts(paperclip_container)
    base = f"/api/companies/{company['id']}/routines"
    body = {"name": "bad", "agent_id": agent["id"], "title": "t", **fields}
    r = await paperclip_client.post(base, json=body)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == code and r.json()["details"][0]["field"] == field
    r = await paperclip_client.patch(f"{base}/{routine['id']}", json=fields)
    assert r.status_code == 422 and r.json()["code"] == code, r.text
    assert await counts(paperclip_container) == before
    unchanged = (await paperclip_client.get(f"{base}/{routine['id']}")).json()
    assert unchanged["cron"] == "0 3 1 1 *" and unchanged["timezone"] == "Europe/Paris"


async def test_the_same_webhook_key_twenty_times_at_once_is_one_execution(
    paperclip_client, paperclip_container, company, routine
):
    before = await counts(paperclip_container)
    answers = await asyncio.gather(
        *(
            paperclip_client.post(
                routine["webhook_path"],
                **signed(routine["webhook_secret"], {"ref": "refs/heads/main"}),
            )
            for _ in range(20)
        )
    )
    assert sorted(a.status_code for a in answers) == [200] * 19 + [201], [a.text for a in answers]
    assert len({a.json()["id"] for a in answers}) == 1
    assert sum(a.json()["deduplicated"] for a in answers) == 19
    [execution] = [a.json() for a in answers if a.status_code == 201]
    assert (execution["trigger"], execution["status"]) == ("webhook", "started")
    assert execution["slot_key"] == "webhook:delivery-1"
    assert await counts(paperclip_container) == (
        before[0],
        before[1] + 1,
        before[2] + 1,
        before[3] + 1,
    )
    issue = (
        await paperclip_client.get(f"/api/companies/{company['id']}/issues/{execution['issue_id']}")
    ).json()
    assert issue["title"].startswith("Update dependencies (webhook ")
    assert '"ref": "refs/heads/main"' in issue["description"]  # the payload, for the agent


@pytest.mark.parametrize(
    "tamper",
    ["wrong secret", "no signature", "another body", "rotated secret"],
)
async def test_a_bad_signature_is_a_401_and_nothing_is_created(
    paperclip_client, paperclip_container, company, routine, tamper
):
    secret = routine["webhook_secret"]
    if tamper == "rotated secret":
        base = f"/api/companies/{company['id']}/routines/{routine['id']}"
        rotated = (await paperclip_client.post(f"{base}/webhook-secret")).json()
        assert rotated["webhook_secret"] not in (None, secret)
        assert (
            await paperclip_client.post(
                routine["webhook_path"], **signed(rotated["webhook_secret"], {}, "fresh")
            )
        ).status_code == 201
    before = await counts(paperclip_container)
    request = signed("pcwh_not-the-secret" if tamper == "wrong secret" else secret, {"a": 1})
    if tamper == "no signature":
        del request["headers"]["x-paperclip-signature"]
    if tamper == "another body":
        request["content"] = b'{"a": 2}'
    r = await paperclip_client.post(routine["webhook_path"], **request)
    assert r.status_code == 401, r.text
    assert r.json()["code"] == "invalid_signature"
    assert await counts(paperclip_container) == before


async def test_a_delivery_without_a_key_is_refused_after_its_signature(
    paperclip_client, paperclip_container, routine
):
    before = await counts(paperclip_container)
    unsigned = signed("pcwh_wrong", {}, key=None)
    assert (await paperclip_client.post(routine["webhook_path"], **unsigned)).status_code == 401
    r = await paperclip_client.post(
        routine["webhook_path"], **signed(routine["webhook_secret"], {}, None)
    )
    assert r.status_code == 422 and r.json()["code"] == "idempotency_key_required"
    assert r.json()["details"][0] == {
        "source": "header",
        "field": "idempotency-key",
        "message": r.json()["message"],
    }
    github = signed(routine["webhook_secret"], {"zen": "x"}, None)
    github["headers"]["x-github-delivery"] = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    github["headers"]["x-hub-signature-256"] = github["headers"].pop("x-paperclip-signature")
    r = await paperclip_client.post(routine["webhook_path"], **github)
    assert r.status_code == 201 and r.json()["slot_key"].startswith("webhook:72d3162e")
    assert await counts(paperclip_container) == (
        before[0],
        before[1] + 1,
        before[2] + 1,
        before[3] + 1,
    )


async def test_a_disabled_routine_refuses_its_triggers_with_409_and_writes_nothing(
    paperclip_client, paperclip_container, company, routine
):
    base = f"/api/companies/{company['id']}/routines/{routine['id']}"
    assert (await paperclip_client.patch(base, json={"enabled": False})).json()["next_runs"] == []
    before = await counts(paperclip_container)
    r = await paperclip_client.post(f"{base}/run", json={})
    assert r.status_code == 409 and r.json()["code"] == "routine_disabled"
    r = await paperclip_client.post(
        routine["webhook_path"], **signed(routine["webhook_secret"], {})
    )
    assert r.status_code == 409 and r.json()["code"] == "routine_disabled"
    assert await counts(paperclip_container) == before


async def test_run_now_is_an_execution_once_per_key_and_the_history_pages_newest_first(
    paperclip_client, company, routine
):
    base = f"/api/companies/{company['id']}/routines/{routine['id']}"
    first = await paperclip_client.post(
        f"{base}/run", json={"idempotency_key": "button-1", "payload": {"why": "release"}}
    )
    again = await paperclip_client.post(f"{base}/run", json={"idempotency_key": "button-1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"] and again.json()["deduplicated"]
    assert first.json()["trigger"] == "manual" and first.json()["payload"] == {"why": "release"}
    # The first execution's issue is open: the next call is skipped (skip_if_open).
    second = (await paperclip_client.post(f"{base}/run", json={})).json()
    assert (second["status"], second["reason"], second["issue_id"]) == (
        "skipped",
        "open_execution",
        None,
    )
    page = (await paperclip_client.get(f"{base}/executions", params={"limit": 1})).json()
    assert [e["id"] for e in page["items"]] == [second["id"]]
    rest = (
        await paperclip_client.get(f"{base}/executions", params={"cursor": page["next_cursor"]})
    ).json()
    assert [e["id"] for e in rest["items"]] == [first.json()["id"]] and rest["next_cursor"] is None
    started = (
        await paperclip_client.get(f"{base}/executions", params={"status": "started"})
    ).json()
    assert [e["id"] for e in started["items"]] == [first.json()["id"]]


async def test_rotating_a_routine_without_a_webhook_is_a_409(paperclip_client, company, agent):
    base = f"/api/companies/{company['id']}/routines"
    made = (
        await paperclip_client.post(
            base, json={"name": "plain", "agent_id": agent["id"], "title": "t"}
        )
    ).json()
    assert made["webhook"] is False and made["webhook_secret"] is None and made["next_runs"] == []
    r = await paperclip_client.post(f"{base}/{made['id']}/webhook-secret")
    assert r.status_code == 409 and r.json()["code"] == "webhook_not_enabled"
    on = (await paperclip_client.patch(f"{base}/{made['id']}", json={"webhook": True})).json()
    assert on["webhook"] and on["webhook_secret"].startswith("pcwh_")
    off = (await paperclip_client.patch(f"{base}/{made['id']}", json={"webhook": False})).json()
    assert not off["webhook"] and off["webhook_path"] is None


async def test_an_agent_heartbeat_is_set_shown_bounded_and_cleared(paperclip_client, company):
    base = f"/api/companies/{company['id']}/agents"
    made = await paperclip_client.post(
        base, json={"name": "watcher", "provider": "fixture", "heartbeat_seconds": 900}
    )
    assert made.status_code == 201 and made.json()["heartbeat_seconds"] == 900
    r = await paperclip_client.patch(f"{base}/{made.json()['id']}", json={"heartbeat_seconds": 30})
    assert r.status_code == 400 and r.json()["code"] == "validation_error"
    r = await paperclip_client.patch(
        f"{base}/{made.json()['id']}", json={"heartbeat_seconds": None}
    )
    assert r.status_code == 200 and r.json()["heartbeat_seconds"] is None
