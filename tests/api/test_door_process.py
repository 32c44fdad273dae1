"""The door over real sockets: ``paperclip serve`` as a process, the attacks as a browser sends them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import httpx
import pytest
import websockets

from paperclip.wire import messages as wire
from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def server(paperclip_database_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("door")
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp / "data"),
        "PAPERCLIP_PORT": "0",
    }
    proc = ServerProcess(env, tmp / "serve.log", "--no-runner").start()
    yield proc, env
    proc.stop()


def test_a_web_page_cannot_drive_the_local_server(server):
    proc, _ = server
    url = f"{proc.url}/api/companies"
    before = httpx.get(url, headers=proc.headers).json()["items"]
    attacks = [
        # A form or no-cors fetch of another site: text/plain, cross-site.
        (
            {"content-type": "text/plain", "origin": "https://evil.example"},
            403,
            "cross_origin_refused",
        ),
        # The same without the browser's marks: still no JSON.
        ({"content-type": "text/plain"}, 415, "unsupported_media_type"),
        # DNS rebinding: the page's own name, resolving to 127.0.0.1.
        (
            {"host": "evil.example:3100", "content-type": "application/json"},
            400,
            "host_not_allowed",
        ),
    ]
    for headers, status, code in attacks:
        # Even with the operator's token (a browser would send the cookie).
        r = httpx.post(url, content=b'{"name": "Pwned"}', headers={**proc.headers, **headers})
        assert (r.status_code, r.json()["code"]) == (status, code), headers
    deep = b'{"name": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    r = httpx.post(url, content=deep, headers={**proc.headers, "content-type": "application/json"})
    assert (r.status_code, r.json()["code"]) == (400, "json_too_deep")
    assert httpx.get(url, headers=proc.headers).json()["items"] == before
    assert "Traceback" not in proc.tail(200)


def test_the_runner_socket_refuses_a_page_and_serves_a_runner(server):
    proc, env = server
    ws_url = proc.url.replace("http://", "ws://") + wire.PATH
    created = subprocess.run(
        [sys.executable, "-m", "paperclip", "runners", "create", "door-runner", "--json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    credential = json.loads(created.stdout)["credential"]
    auth = {"Authorization": f"Bearer {credential}"}

    async def handshake(**kwargs) -> object:
        try:
            async with websockets.connect(ws_url, additional_headers=auth, **kwargs) as ws:
                return ws.response.status_code
        except websockets.InvalidStatus as exc:
            return exc.response.status_code

    # A page of another origin cannot open it (browsers send Origin on every WebSocket).
    assert asyncio.run(handshake(origin="https://evil.example")) == 403
    # The runner (no Origin, its credential) connects.
    assert asyncio.run(handshake()) == 101
