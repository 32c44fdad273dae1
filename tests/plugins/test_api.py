"""``GET /api/plugins`` through the app, with the test kit's plugin host."""

from __future__ import annotations

import types

from paperclip_hookspecs import HOOK_API, hookimpl
from paperclip_hookspecs.presentation import PresentationDecision

from paperclip.plugin_host.builtin import BUILTIN_PLUGINS


async def test_get_plugins_lists_the_builtins(paperclip_client):
    response = await paperclip_client.get("/api/plugins")
    assert response.status_code == 200
    body = response.json()
    assert body["hook_api"] == HOOK_API
    assert body["problems"] == []
    builtins = [p for p in body["plugins"] if p["builtin"]]
    assert [p["name"] for p in builtins] == [name for name, _ in BUILTIN_PLUGINS]
    presentation = next(p for p in builtins if p["name"] == "presentation")
    assert presentation == {
        "name": "presentation",
        "distribution": "paperclip-control-plane",
        "version": presentation["version"],
        "entry_point": "paperclip.plugin_host.builtin.presentation",
        "builtin": True,
        "status": "loaded",
        "hooks": ["paperclip_decide_presentation"],
        "hook_api": None,
        "code": None,
        "reason": None,
    }


async def test_get_plugins_shows_a_registered_plugin(paperclip_client, paperclip_register_plugin):
    @hookimpl
    def paperclip_decide_presentation(turn):
        return PresentationDecision.none("testing")

    paperclip_register_plugin(
        types.SimpleNamespace(paperclip_decide_presentation=paperclip_decide_presentation),
        name="quiet",
    )
    body = (await paperclip_client.get("/api/plugins")).json()
    quiet = body["plugins"][-1]
    assert (quiet["name"], quiet["status"], quiet["hooks"]) == (
        "quiet",
        "loaded",
        ["paperclip_decide_presentation"],
    )


async def test_get_plugins_is_in_the_openapi_document(paperclip_client):
    paths = (await paperclip_client.get("/api/docs/openapi.json")).json()["paths"]
    assert "get" in paths["/api/plugins"]
