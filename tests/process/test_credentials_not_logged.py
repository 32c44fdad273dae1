"""A credential sent in a query string is never written to the server's log.

uvicorn logs each WebSocket's request line with its query string
(``"WebSocket /api/runner/v1/connect?token=pcrn_…" [accepted]``): a runner
credential or a key put there by a client landed in the log, in both formats.
"""

from __future__ import annotations

import asyncio
import secrets

import httpx
import pytest
import websockets

from paperclip.domain.keys.api_keys import KEY_PREFIX
from paperclip.domain.runs.run_tokens import RUN_TOKEN_PREFIX
from paperclip.domain.runs.runners import CREDENTIAL_PREFIX
from paperclip.logging import CREDENTIAL_PREFIXES
from paperclip.operator_token import TOKEN_PREFIX as OPERATOR_TOKEN_PREFIX
from tests.support.processes import ServerProcess, wait_until

pytestmark = pytest.mark.process


def test_the_logs_know_every_credential_prefix():
    assert set(CREDENTIAL_PREFIXES) == {
        KEY_PREFIX,
        RUN_TOKEN_PREFIX,
        CREDENTIAL_PREFIX,
        OPERATOR_TOKEN_PREFIX,
    }


@pytest.mark.parametrize("log_format", ["console", "json"])
def test_credentials_in_query_strings_are_not_logged(paperclip_database_url, tmp_path, log_format):
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp_path / "data"),
        "PAPERCLIP_PORT": "0",
        "PAPERCLIP_LOG_FORMAT": log_format,
        "COLUMNS": "1000",  # the console's lines unwrapped: a secret is never cut in two
    }
    server = ServerProcess(env, tmp_path / "serve.log", "--no-runner").start()
    secret = {
        prefix: prefix + secrets.token_urlsafe(16) for prefix in ("pck_", "pcr_", "pcrn_", "")
    }
    try:
        httpx.get(f"{server.url}/api/companies?api_key={secret['pck_']}&token={secret['pcr_']}")
        httpx.get(f"{server.url}/api/nowhere?{secret['pcrn_']}")
        httpx.get(server.board())  # the board's sign-in URL carries the operator token
        ws = server.url.replace("http", "ws", 1)

        async def knock() -> None:
            for path in (
                f"/api/runner/v1/connect?token={secret['pcrn_']}",
                f"/api/nowhere?password={secret['']}",
            ):
                try:
                    async with websockets.connect(ws + path) as socket:
                        await socket.recv()
                except websockets.WebSocketException:
                    pass  # refused, as it should be: the line is logged either way

        asyncio.run(knock())
        log = wait_until(
            lambda: (text := (tmp_path / "serve.log").read_text()).count("WebSocket") >= 2 and text,
            10,
            message="the WebSocket lines in the log",
        )
    finally:
        server.stop()
    for value in [*secret.values(), server.token]:
        assert value not in log
    # The lines are there, with the query's names and without its values.
    assert "connect?token=…" in log or "connect?token=\\u2026" in log  # console, JSON
