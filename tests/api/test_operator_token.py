"""Without login, the operator proves who they are: the operator token of the data dir.

A bearer token, or the board's cookie that its sign-in URL (``/?token=…``) sets;
API keys and run tokens still work as themselves; anyone else is refused with
``401 operator_token_required``, saying where the token is.
"""

from __future__ import annotations

import os
import stat
import uuid

import httpx
import pytest

from paperclip.api.openapi import SECURITY_SCHEME
from paperclip.app import create_app
from paperclip.models import KeyRole
from paperclip.operator_token import TOKEN_PREFIX, ensure_token, token_file
from paperclip.settings import ConfigurationError
from paperclip.testing import operator_headers, running_lifespan


@pytest.fixture
async def bare(paperclip_app):
    """A client of the local app that sends nothing of its own (as another process would)."""
    async with running_lifespan(paperclip_app):
        transport = httpx.ASGITransport(app=paperclip_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:3100") as c:
            yield c


def test_the_token_is_made_once_in_the_data_dir_for_its_user_alone(
    paperclip_app, paperclip_settings
):
    path = token_file(paperclip_settings.data_dir)
    info = path.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    token = path.read_text().strip()
    assert token.startswith(TOKEN_PREFIX) and len(token) > 40
    assert paperclip_app.state.operator_token == token
    # The next start reuses it: a signed-in browser stays signed in.
    assert ensure_token(paperclip_settings.data_dir) == token


async def test_without_the_token_nothing_but_the_public_routes(
    bare, paperclip_app, paperclip_settings
):
    assert (await bare.get("/api/health")).status_code == 200
    assert (await bare.get("/")).status_code == 200  # the page; its data needs the token
    for attempt in [
        bare.get("/api/companies"),
        bare.post("/api/companies", json={"name": "Intruder"}),
        bare.get("/api/companies", headers={"Authorization": "Bearer pco_guessed"}),
        bare.get("/api/companies", headers={"Authorization": "Bearer nonsense"}),
        bare.get("/api/companies", headers={"Cookie": "paperclip_operator_3100=pco_guessed"}),
    ]:
        r = await attempt
        assert r.status_code == 401, r.text
        assert r.json()["code"] == "operator_token_required"
        assert str(token_file(paperclip_settings.data_dir)) in r.json()["message"]
    # Nothing was written by the refused POST.
    listed = await bare.get("/api/companies", headers=operator_headers(paperclip_app))
    assert [c["name"] for c in listed.json()["items"]] == []


async def test_the_token_as_a_bearer_acts_as_the_operator(bare, paperclip_app):
    auth = operator_headers(paperclip_app)
    made = await bare.post("/api/companies", json={"name": "Mine"}, headers=auth)
    assert made.status_code == 201, made.text


async def test_the_sign_in_url_sets_a_strict_http_only_cookie_and_leaves_the_address(
    bare, paperclip_app
):
    token = paperclip_app.state.operator_token
    signed = await bare.get(f"/?token={token}")
    assert signed.status_code == 303 and signed.headers["location"] == "/"
    cookie = signed.headers["set-cookie"]
    assert cookie.startswith(f"paperclip_operator_3100={token};")
    attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "path=/", "samesite=strict"} <= attributes
    assert signed.headers["referrer-policy"] == "no-referrer"

    # The cookie is the operator's, for this server's port only.
    bare.cookies.set("paperclip_operator_3100", token)
    assert (await bare.get("/api/companies")).status_code == 200
    other_port = await bare.get("/api/companies", headers={"host": "127.0.0.1:3101"})
    assert other_port.status_code == 401

    # A wrong token signs nothing in, and leaves the address bar all the same.
    wrong = await bare.get("/?token=pco_wrong")
    assert wrong.status_code == 303 and wrong.headers["location"] == "/"
    assert "set-cookie" not in wrong.headers


async def test_api_keys_and_their_roles_hold_without_login(
    bare, paperclip_app, paperclip_container
):
    alpha = (
        await bare.post(
            "/api/companies", json={"name": "Alpha"}, headers=operator_headers(paperclip_app)
        )
    ).json()
    _, viewer = await paperclip_container.api_keys().create(
        f"v {uuid.uuid4()}", company_id=uuid.UUID(alpha["id"]), role=KeyRole.VIEWER
    )
    auth = {"Authorization": f"Bearer {viewer}"}
    seen = await bare.get("/api/companies", headers=auth)
    assert [c["id"] for c in seen.json()["items"]] == [alpha["id"]]
    refused = await bare.post("/api/companies", json={"name": "B"}, headers=auth)
    assert refused.status_code == 403
    wrong = await bare.get("/api/companies", headers={"Authorization": "Bearer pck_wrong"})
    assert (wrong.status_code, wrong.json()["code"]) == (401, "invalid_api_key")


async def test_the_api_document_says_every_operation_needs_a_credential(bare):
    document = (await bare.get("/api/docs/openapi.json")).json()
    operation = document["paths"]["/api/companies"]["get"]
    assert operation["security"] == [{SECURITY_SCHEME: []}]  # no empty alternative: required


def test_a_token_file_others_may_read_or_of_another_user_is_refused(
    paperclip_settings, paperclip_container, paperclip_plugin_host
):
    path = token_file(paperclip_settings.data_dir)
    path.parent.mkdir(parents=True)
    path.write_text("pco_known-to-others\n")
    path.chmod(0o644)
    with pytest.raises(ConfigurationError, match="may be read or written by other users"):
        create_app(paperclip_settings, paperclip_plugin_host, container=paperclip_container)
    path.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(path, 65534, -1)  # nobody's
        with pytest.raises(ConfigurationError, match="belongs to another user"):
            create_app(paperclip_settings, paperclip_plugin_host, container=paperclip_container)


async def test_turned_off_every_local_caller_is_the_operator(
    paperclip_settings, paperclip_container, paperclip_plugin_host
):
    settings = paperclip_settings.model_copy(update={"operator_token_required": False})
    app = create_app(settings, paperclip_plugin_host, container=paperclip_container)
    assert app.state.operator_token is None
    assert not token_file(settings.data_dir).exists()
    async with running_lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            assert (await c.get("/api/companies")).status_code == 200
