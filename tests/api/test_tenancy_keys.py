"""With login: a key of company A, on every route of the app, reaches nothing of company B.

And a key's role bounds what it may do inside its own company. The routes
come from the app (``tests/api/tenancy.py``), so a new route cannot be missed:
one without an access rule, a body or ids the walk knows fails here.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from paperclip.app import create_app
from paperclip.http.access import Access
from paperclip.models import KeyRole
from paperclip.settings import DeploymentMode
from paperclip.testing import running_lifespan
from tests.api.tenancy import (
    BODIES,
    REFERENCES,
    fill_reference,
    http_routes,
    make_company,
    table_fingerprint,
)

PUBLIC = {
    ("GET", "/api/health"),
    ("GET", "/api/docs"),
    ("GET", "/api/docs/openapi.json"),
    ("GET", "/api/docs/{path}"),
    ("GET", "/api/docs/oauth2-redirect.html"),
    ("GET", "/api/docs/assets/{file_path}"),
    ("HEAD", "/api/docs/assets/{file_path}"),
    # The board's page and files: no data in them; the page calls the API with a key.
    ("GET", "/"),
    ("GET", "/board/{name}"),
    # A routine's webhook: signed with the routine's secret instead of a key.
    ("POST", "/api/companies/{company_id}/routines/{routine_id}/webhook"),
}


@pytest.fixture
async def world(paperclip_settings, paperclip_container, paperclip_plugin_host, fixture_kind):
    """An authenticated app with companies Alpha and Bravo, and keys of every role for Alpha."""
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
            a = await make_company(client, paperclip_container, "Alpha")
            b = await make_company(client, paperclip_container, "Bravo")
            keys = {}
            for role in (KeyRole.ADMIN, KeyRole.MEMBER, KeyRole.VIEWER):
                _, keys[role] = await paperclip_container.api_keys().create(
                    f"alpha {role}", company_id=uuid.UUID(a["company_id"]), role=role
                )
            yield {"app": app, "client": client, "a": a, "b": b, "keys": keys}


def as_key(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


def body_of(route):
    if not route.takes_body:
        return None
    assert (route.method, route.path) in BODIES, f"add a body for {route} to tests/api/tenancy.py"
    return BODIES[(route.method, route.path)]


async def test_a_key_of_company_a_reaches_nothing_of_company_b(world, paperclip_container):
    app, client, a, b = world["app"], world["client"], world["a"], world["b"]
    admin = as_key(world["keys"][KeyRole.ADMIN])
    before = await table_fingerprint(paperclip_container)
    walked, public = [], set()
    for route in http_routes(app):
        assert route.access is not None, f"{route} declares no access rule"
        if route.access is Access.PUBLIC:
            public.add((route.method, route.path))
            continue
        if "company_id" in route.names:
            # B in the path, with B's own ids: as if B did not exist.
            r = await client.request(route.method, route.url(b), json=body_of(route), headers=admin)
            assert r.status_code == 404, (route, r.status_code, r.text)
            assert r.json()["code"] == "company_not_found"
            # A in the path, B's ids after it: those are missing too.
            if len(route.names) > 1:
                url = route.url(b | {"company_id": a["company_id"]})
                r = await client.request(route.method, url, json=body_of(route), headers=admin)
                assert r.status_code == 404, (route, r.status_code, r.text)
        elif route.access is Access.INSTANCE:
            r = await client.request(route.method, route.path, json=body_of(route), headers=admin)
            assert r.status_code == 403 and r.json()["code"] == "instance_admin_required"
        else:
            r = await client.request(route.method, route.path, headers=admin)
            assert r.status_code == 200, (route, r.text)
        # Nothing of B: not its names, not an id the request did not itself send.
        sent = str(r.request.url)
        leaked = [v for k, v in b.items() if k != "name" and v not in sent and v in r.text]
        assert "Bravo" not in r.text and not leaked, (route, r.text)
        walked.append(route)

    for (method, path), variants in REFERENCES.items():
        for variant in variants:
            r = await client.request(
                method, path.format(**a), **fill_reference(variant, b), headers=admin
            )
            assert r.status_code == 422, (method, path, variant, r.text)
            assert r.json()["code"].endswith("not_found")
            assert "Bravo" not in r.text

    listed = (await client.get("/api/companies", headers=admin)).json()["items"]
    assert [c["id"] for c in listed] == [a["company_id"]]
    assert public == PUBLIC
    assert len(walked) == len([r for r in http_routes(app) if r.access is not Access.PUBLIC])
    assert len(walked) >= 22
    assert await table_fingerprint(paperclip_container) == before


NEEDS = {Access.WRITE: KeyRole.MEMBER, Access.MANAGE: KeyRole.ADMIN}


@pytest.mark.parametrize("role", [KeyRole.VIEWER, KeyRole.MEMBER])
async def test_a_role_reaches_only_what_it_may(world, paperclip_container, role):
    app, client, a = world["app"], world["client"], world["a"]
    key = as_key(world["keys"][role])
    before = await table_fingerprint(paperclip_container)
    refused = 0
    for route in http_routes(app):
        if route.access in (None, Access.PUBLIC, Access.SIGNED_IN, Access.READ):
            continue
        if route.access is Access.INSTANCE:
            expected = "instance_admin_required"
        elif role is KeyRole.VIEWER or route.access is Access.MANAGE:
            expected = "insufficient_role"
        else:
            continue  # a member may write: covered by the tests of each resource
        r = await client.request(route.method, route.url(a), json=body_of(route), headers=key)
        assert r.status_code == 403, (route, r.status_code, r.text)
        assert r.json()["code"] == expected, route
        refused += 1
    assert refused >= (14 if role is KeyRole.VIEWER else 9)
    assert await table_fingerprint(paperclip_container) == before
    # What it may: read everything of its company.
    r = await client.get(f"/api/companies/{a['company_id']}/issues/{a['issue_id']}", headers=key)
    assert r.status_code == 200


async def test_a_member_writes_and_an_admin_manages(world):
    client, a, keys = world["client"], world["a"], world["keys"]
    base = f"/api/companies/{a['company_id']}"
    r = await client.post(
        f"{base}/issues", json={"title": "by a member"}, headers=as_key(keys[KeyRole.MEMBER])
    )
    assert r.status_code == 201
    r = await client.post(
        f"{base}/agents",
        json={"name": "by an admin", "provider": "fixture"},
        headers=as_key(keys[KeyRole.ADMIN]),
    )
    assert r.status_code == 201


async def test_without_a_valid_key_nothing_is_reachable(world):
    app, client, a = world["app"], world["client"], world["a"]
    for route in http_routes(app):
        if route.access is Access.PUBLIC:
            continue
        url = route.url(a) if route.names else route.path
        for headers in ({"authorization": ""}, as_key("pck_not-a-key")):
            r = await client.request(route.method, url, json=body_of(route), headers=headers)
            assert r.status_code == 401, (route, r.text)
            assert r.headers["www-authenticate"] == "Bearer"
