"""An issue in a URL by its identifier (``PAP-1``, any case) as well as by its id.

Every route with ``{issue_id}`` in its path resolves an identifier within the
URL's company; one of another company, or of no issue, is ``404
issue_not_found`` exactly as a missing id is, and nothing is written.
"""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
async def issue(paperclip_client, company):
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/issues", json={"title": "Named by people"}
    )
    assert r.status_code == 201, r.text
    return r.json()


async def test_every_issue_route_takes_the_identifier(paperclip_client, company, agent, issue):
    base = f"/api/companies/{company['id']}/issues"
    assert issue["identifier"] == "PAP-1"

    for ref in ("PAP-1", "pap-1", " Pap-1", issue["id"], issue["id"].upper()):
        r = await paperclip_client.get(f"{base}/{ref}")
        assert r.status_code == 200, (ref, r.text)
        assert r.json()["id"] == issue["id"]

    r = await paperclip_client.patch(
        f"{base}/pap-1", json={"title": "Renamed", "assignee_agent_id": agent["id"]}
    )
    assert r.status_code == 200 and r.json()["title"] == "Renamed"

    r = await paperclip_client.post(f"{base}/PAP-1/comments", json={"body": "by identifier"})
    assert r.status_code == 201 and r.json()["issue_id"] == issue["id"]
    comment = r.json()
    listed = (await paperclip_client.get(f"{base}/pap-1/comments")).json()["items"]
    assert [c["id"] for c in listed] == [comment["id"]]
    r = await paperclip_client.patch(
        f"{base}/PAP-1/comments/{comment['id']}", json={"body": "edited"}
    )
    assert r.status_code == 200 and r.json()["body"] == "edited"

    r = await paperclip_client.post(
        f"{base}/PAP-1/interactions", json={"kind": "approval", "title": "Ship it?"}
    )
    assert r.status_code == 201 and r.json()["issue_id"] == issue["id"]
    assert len((await paperclip_client.get(f"{base}/PAP-1/interactions")).json()["items"]) == 1

    # Resolved, then the workspace read answers for the issue itself: it never had one.
    r = await paperclip_client.get(f"{base}/PAP-1/workspace")
    assert r.status_code == 404 and r.json()["code"] == "workspace_not_found"

    assert (await paperclip_client.delete(f"{base}/PAP-1")).status_code == 204
    assert (await paperclip_client.get(f"{base}/{issue['id']}")).status_code == 404


@pytest.mark.parametrize(
    "ref",
    ["PAP-2", "PAP-0", "PAP-01", "PAP-1x", "PAP-99999999999", "-1", "PAP", "P-1", "nonsense"],
)
async def test_an_identifier_of_no_issue_is_not_found(paperclip_client, company, issue, ref):
    base = f"/api/companies/{company['id']}/issues"
    for method, path, body in (
        ("GET", f"{base}/{ref}", None),
        ("PATCH", f"{base}/{ref}", {"title": "x"}),
        ("POST", f"{base}/{ref}/comments", {"body": "x"}),
        ("GET", f"{base}/{ref}/workspace", None),
    ):
        r = await paperclip_client.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
        assert r.json()["code"] == "issue_not_found"
        assert ref in r.json()["message"]
    comments = await paperclip_client.get(f"{base}/{issue['id']}/comments")
    assert comments.json()["items"] == []  # nothing written


async def test_an_identifier_is_looked_up_in_the_urls_company_only(
    paperclip_client, company, issue
):
    other = (
        await paperclip_client.post("/api/companies", json={"name": "Other", "issue_prefix": "OTH"})
    ).json()
    theirs = (
        await paperclip_client.post(f"/api/companies/{other['id']}/issues", json={"title": "t"})
    ).json()
    assert theirs["identifier"] == "OTH-1"

    mine = f"/api/companies/{company['id']}/issues"
    r = await paperclip_client.get(f"{mine}/OTH-1")
    assert r.status_code == 404 and r.json()["code"] == "issue_not_found"
    r = await paperclip_client.post(f"{mine}/OTH-1/comments", json={"body": "x"})
    assert r.status_code == 404 and r.json()["code"] == "issue_not_found"
    r = await paperclip_client.get(f"/api/companies/{other['id']}/issues/PAP-1")
    assert r.status_code == 404 and r.json()["code"] == "issue_not_found"
    r = await paperclip_client.get(f"/api/companies/{other['id']}/issues/OTH-1")
    assert r.status_code == 200 and r.json()["id"] == theirs["id"]


async def test_an_issue_keeps_its_identifier_after_its_company_changes_prefix(
    paperclip_client, company, issue
):
    r = await paperclip_client.patch(
        f"/api/companies/{company['id']}", json={"issue_prefix": "NEW"}
    )
    assert r.status_code == 200, r.text
    base = f"/api/companies/{company['id']}/issues"
    assert (await paperclip_client.get(f"{base}/PAP-1")).json()["id"] == issue["id"]
    assert (await paperclip_client.get(f"{base}/NEW-1")).status_code == 404
    second = (await paperclip_client.post(base, json={"title": "after"})).json()
    assert second["identifier"] == "NEW-2"
    assert (await paperclip_client.get(f"{base}/new-2")).json()["id"] == second["id"]


async def test_a_missing_id_is_still_not_found(paperclip_client, company):
    r = await paperclip_client.get(f"/api/companies/{company['id']}/issues/{uuid.uuid4()}")
    assert r.status_code == 404 and r.json()["code"] == "issue_not_found"


def test_the_api_document_says_the_path_takes_either():
    from paperclip.app import create_app
    from paperclip.settings import Settings

    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    paths = app.openapi_schema.to_schema()["paths"]
    with_issue = [p for p in paths if "{issue_id}" in p]
    assert len(with_issue) == 7
    for path in with_issue:
        for method, operation in paths[path].items():
            if not isinstance(operation, dict) or "parameters" not in operation:
                continue
            (param,) = [p for p in operation["parameters"] if p["name"] == "issue_id"]
            assert param["in"] == "path" and "format" not in param["schema"], (method, path)
            assert "identifier" in param["description"]


async def test_a_run_token_reaches_its_own_issue_by_identifier_and_no_other(
    paperclip_client, paperclip_container
):
    from tests.engine.test_run_tokens import make_run

    run = await make_run(paperclip_client, paperclip_container, "Tokens")
    base = f"/api/companies/{run['company_id']}/issues"
    own = (await paperclip_client.get(f"{base}/{run['issue_id']}")).json()["identifier"]
    other = (await paperclip_client.post(base, json={"title": "not the run's"})).json()
    auth = {"Authorization": f"Bearer {run['token']}"}

    for ref in (own, own.lower(), run["issue_id"]):
        r = await paperclip_client.get(f"{base}/{ref}", headers=auth)
        assert r.status_code == 200 and r.json()["id"] == run["issue_id"], ref
    r = await paperclip_client.post(
        f"{base}/{own.lower()}/comments", json={"body": "from the agent"}, headers=auth
    )
    assert r.status_code == 201, r.text

    for ref in (other["identifier"], other["identifier"].lower(), other["id"]):
        r = await paperclip_client.get(f"{base}/{ref}", headers=auth)
        assert r.status_code == 404 and r.json()["code"] == "issue_not_found", ref
        r = await paperclip_client.post(f"{base}/{ref}/comments", json={"body": "x"}, headers=auth)
        assert r.status_code == 404 and r.json()["code"] == "issue_not_found", ref
        r = await paperclip_client.get(f"{base}/{ref}/comments", headers=auth)
        assert r.status_code == 404, ref
    theirs = await paperclip_client.get(f"{base}/{other['id']}/comments")
    assert theirs.json()["items"] == []  # nothing written on the other issue
