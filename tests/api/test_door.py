"""The door (``paperclip.api.gate``): what a web page, a rebinding host or a bad body gets.

Each attack is sent as a browser would send it, and each test checks both
the refusal (status and code) and that nothing was written.
"""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import func, select

from paperclip.api.json_body import MAX_JSON_DEPTH
from paperclip.models import ActivityEntry, Company


async def count(container, model=Company):
    async with container.sessions()() as session:
        return (await session.execute(select(func.count()).select_from(model))).scalar()


async def test_a_cross_origin_text_plain_post_is_refused_and_writes_nothing(
    paperclip_client, paperclip_container
):
    # What a <form enctype="text/plain"> or fetch(..., {mode: "no-cors"}) of any web page sends.
    before = await count(paperclip_container)
    r = await paperclip_client.post(
        "/api/companies",
        content=b'{"name": "Pwned"}',
        headers={
            "content-type": "text/plain",
            "origin": "https://evil.example",
            "sec-fetch-site": "cross-site",
        },
    )
    assert r.status_code == 403 and r.json()["code"] == "cross_origin_refused"
    assert await count(paperclip_container) == before


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://evil.example"},
        {"origin": "null"},  # sandboxed frames, file: pages
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},  # another port or subdomain of the same site
        {"origin": "http://127.0.0.1:9999"},  # another local server's page
    ],
)
async def test_cross_origin_requests_are_refused(paperclip_client, paperclip_container, headers):
    before = await count(paperclip_container)
    r = await paperclip_client.post("/api/companies", json={"name": "Pwned"}, headers=headers)
    assert r.status_code == 403 and r.json()["code"] == "cross_origin_refused"
    r = await paperclip_client.get("/api/companies", headers=headers)
    assert r.status_code == 403
    assert await count(paperclip_container) == before


async def test_a_text_plain_post_without_origin_is_refused(paperclip_client, paperclip_container):
    before = await count(paperclip_container)
    for media_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        r = await paperclip_client.post(
            "/api/companies", content=b'{"name": "Pwned"}', headers={"content-type": media_type}
        )
        assert r.status_code == 415, media_type
        body = r.json()
        assert body["code"] == "unsupported_media_type"
        assert body["details"] == [
            {"source": "header", "field": "content-type", "message": "must be application/json"}
        ]
    r = await paperclip_client.post("/api/companies", content=b'{"name": "untyped"}')
    assert r.status_code == 415
    assert await count(paperclip_container) == before


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:3100", "127.0.0.1.nip.io:3100", "10.0.0.5", ""]
)
async def test_a_foreign_host_is_refused(paperclip_client, paperclip_container, host):
    # DNS rebinding: the page's own name resolves to 127.0.0.1, so the browser calls it same-origin.
    before = await count(paperclip_container)
    r = await paperclip_client.post(
        "/api/companies",
        json={"name": "Pwned"},
        headers={"host": host, "origin": f"http://{host}", "sec-fetch-site": "same-origin"},
    )
    assert r.status_code == 400 and r.json()["code"] == "host_not_allowed"
    assert r.json()["details"][0]["field"] == "host"
    assert await count(paperclip_container) == before


async def test_the_server_own_pages_keep_working(paperclip_client):
    # The future browser board is served by `paperclip serve` itself: same origin.
    for host in ("127.0.0.1:3100", "localhost:3100", "[::1]:3100", "127.0.0.1"):
        r = await paperclip_client.post(
            "/api/companies",
            json={"name": f"Board {host}"},
            headers={"host": host, "origin": f"http://{host}", "sec-fetch-site": "same-origin"},
        )
        assert r.status_code == 201, (host, r.text)
    r = await paperclip_client.get(
        "/api/companies", headers={"sec-fetch-site": "none"}
    )  # typed in the bar
    assert r.status_code == 200


async def test_allowed_hosts_adds_names(
    paperclip_settings, paperclip_container, paperclip_plugin_host
):
    import httpx

    from paperclip.app import create_app
    from paperclip.testing import running_lifespan

    app = create_app(
        paperclip_settings.model_copy(update={"allowed_hosts": frozenset({"paperclip.lan"})}),
        paperclip_plugin_host,
        container=paperclip_container,
    )
    async with running_lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://paperclip.lan") as c:
            assert (await c.get("/api/health")).status_code == 200
            r = await c.get("/api/health", headers={"host": "other.lan"})
            assert r.status_code == 400


async def test_ten_thousand_deep_json_is_a_400_without_traceback(
    paperclip_client, paperclip_container, caplog
):
    caplog.set_level(logging.DEBUG)
    before = await count(paperclip_container, ActivityEntry)
    deep = b'{"name": "x", "issue_prefix": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    r = await paperclip_client.post(
        "/api/companies", content=deep, headers={"content-type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["code"] == "json_too_deep"
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR or rec.exc_info]
    assert await count(paperclip_container, ActivityEntry) == before


async def test_depth_is_bounded_anywhere_in_the_body(paperclip_client, company, fixture_kind):
    nested: object = "leaf"
    for _ in range(MAX_JSON_DEPTH + 1):
        nested = {"k": nested}
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/agents/",
        json={"name": "deep", "provider": "fixture", "provider_config": nested},
    )
    assert r.status_code == 400 and r.json()["code"] == "json_too_deep"
    ok: object = "leaf"
    for _ in range(MAX_JSON_DEPTH - 3):
        ok = [ok]
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/agents/{'0' * 8}-0000-0000-0000-{'0' * 12}/wakeup",
        json={"payload": {"deep": ok}},
    )
    assert r.status_code == 404  # past the door: the agent does not exist


async def test_malformed_json_has_its_own_code(paperclip_client):
    for raw in (b"{not json", b'{"name": "x"', b"\xff\xfe", b'"\\ud800"'):
        r = await paperclip_client.post(
            "/api/companies", content=raw, headers={"content-type": "application/json"}
        )
        assert r.status_code == 400 and r.json()["code"] == "malformed_json", raw


async def test_nul_is_refused_naming_the_field(paperclip_client, company, paperclip_container):
    before = await count(paperclip_container, ActivityEntry)
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/issues", json={"title": "a\x00b", "description": "d"}
    )
    assert r.status_code == 400 and r.json()["code"] == "invalid_character"
    assert r.json()["details"][0]["field"] == "title"
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/agents",
        json={"name": "n", "provider": "fixture", "provider_config": {"model": ["ok", "\x00"]}},
    )
    assert r.json()["details"][0]["field"] == "provider_config.model[1]"
    r = await paperclip_client.get(f"/api/companies/{company['id']}/issues", params={"q": "a\x00"})
    assert r.status_code == 400 and r.json()["details"] == [
        {"source": "query", "field": "q", "message": "contains NUL"}
    ]
    assert await count(paperclip_container, ActivityEntry) == before


async def test_bodies_are_bounded(paperclip_client, paperclip_container):
    before = await count(paperclip_container)
    r = await paperclip_client.post("/api/companies", json={"name": "x" * 2_000_000})
    assert r.status_code == 413 and r.json()["code"] == "request_too_large"
    assert await count(paperclip_container) == before


async def test_head_answers_every_get_and_405_says_allow(paperclip_client):
    get = await paperclip_client.get("/api/docs/openapi.json")
    head = await paperclip_client.head("/api/docs/openapi.json")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == get.headers["content-length"]
    r = await paperclip_client.put("/api/companies")
    assert r.status_code == 405 and r.json()["code"] == "method_not_allowed"
    assert set(r.headers["allow"].split(", ")) >= {"GET", "HEAD", "POST"}
    r = await paperclip_client.head("/api/companies/not-a-uuid")
    assert r.status_code == 404 and r.content == b""
