"""Without login: every route, with company A in the path and company B's ids, is a 404.

Nothing of B is leaked and nothing is written. Keys of one company are in
``test_tenancy_keys.py``.
"""

from __future__ import annotations

import uuid

import pytest

from tests.api.tenancy import (
    BODIES,
    REFERENCES,
    fill_reference,
    http_routes,
    make_company,
    table_fingerprint,
)


async def test_every_route_refuses_foreign_ids(
    paperclip_client, paperclip_app, paperclip_container
):
    a = await make_company(paperclip_client, paperclip_container, "Alpha")
    b = await make_company(paperclip_client, paperclip_container, "Bravo")
    before = await table_fingerprint(paperclip_container)
    walked = []
    for route in http_routes(paperclip_app):
        if "company_id" not in route.names or route.names == ["company_id"]:
            continue  # instance-wide routes, or routes that take only the company (below)
        url = route.url({n: b[n] for n in route.names} | {"company_id": a["company_id"]})
        body = BODIES.get((route.method, route.path)) if route.takes_body else None
        assert body is not None or not route.takes_body, f"add a body for {route} to BODIES"
        r = await paperclip_client.request(route.method, url, json=body)
        assert r.status_code == 404, (route, r.status_code, r.text)
        assert r.json()["code"].endswith("not_found")
        assert "Bravo" not in r.text
        walked.append(route)
    assert len(walked) >= 16

    for (method, path), variants in REFERENCES.items():
        for variant in variants:
            url = path.format(**a)
            r = await paperclip_client.request(method, url, **fill_reference(variant, b))
            # A reference in a body or query is invalid input; the code says it is not found.
            assert r.status_code == 422, (method, url, variant, r.text)
            assert r.json()["code"].endswith("not_found")
            assert "Bravo" not in r.text
            assert r.json()["details"] is None or r.json()["details"][0]["source"] in (
                "body",
                "query",
            )

    assert await table_fingerprint(paperclip_container) == before


@pytest.mark.parametrize("resource", ["agents", "issues", "runs", "projects", "routines"])
async def test_lists_show_only_the_company_own_rows(
    paperclip_client, paperclip_container, resource
):
    a = await make_company(paperclip_client, paperclip_container, "Alpha")
    b = await make_company(paperclip_client, paperclip_container, "Bravo")
    items = (await paperclip_client.get(f"/api/companies/{a['company_id']}/{resource}")).json()[
        "items"
    ]
    assert items and all(i["company_id"] == a["company_id"] for i in items)
    assert b["company_id"] not in str(items)
    comments = (
        await paperclip_client.get(
            f"/api/companies/{a['company_id']}/issues/{a['issue_id']}/comments"
        )
    ).json()["items"]
    assert [c["body"] for c in comments] == ["Alpha body"]


async def test_every_list_of_a_company_that_does_not_exist_is_a_404(
    paperclip_client, paperclip_app
):
    missing = str(uuid.uuid4())
    walked = 0
    for route in http_routes(paperclip_app):
        if route.method != "GET" or route.names != ["company_id"]:
            continue
        r = await paperclip_client.get(route.url({"company_id": missing}))
        if "text/event-stream" in r.headers.get("content-type", ""):
            continue
        assert (r.status_code, r.json()["code"]) == (404, "company_not_found"), (route, r.text)
        walked += 1
    assert walked >= 10
