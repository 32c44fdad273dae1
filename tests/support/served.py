"""A control plane as a process, in authenticated mode, with what its streams need.

For the tests of the server's limits: a key made with the CLI, a running run
and a conversation whose streams stay open, and a raw client of one stream.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from tests.support import fixture_provider
from tests.support.processes import ServerProcess


def serve(database_url: str, tmp: Path, **settings: str) -> tuple[ServerProcess, dict[str, str]]:
    """``paperclip serve --no-runner`` in authenticated mode on ``database_url``; its env."""
    env = {
        "PAPERCLIP_DATABASE_URL": database_url,
        "PAPERCLIP_DATA_DIR": str(tmp / "data"),
        "PAPERCLIP_PORT": "0",
        "PAPERCLIP_DEPLOYMENT_MODE": "authenticated",
        **fixture_provider.install(tmp / "site"),
        **settings,
    }
    return ServerProcess(env, tmp / "serve.log", "--no-runner").start(), env


def make_key(env: dict[str, str], tmp: Path) -> str:
    """A new instance-admin key (``paperclip keys create``)."""
    out = subprocess.run(
        [sys.executable, "-m", "paperclip", "keys", "create", f"k {uuid.uuid4()}", "--json"],
        env=ServerProcess(env, tmp / "keys.log").env,
        capture_output=True,
        text=True,
        check=True,
    )
    return str(json.loads(out.stdout)["key"])


async def running_run(database_url: str, url: str, key: str) -> dict[str, str]:
    """A company, a conversation and a run that never ends (no runner): paths of their
    streams (``run``, ``chat``), which stay open."""
    from paperclip.db.engine import create_engine, create_session_factory
    from paperclip.models import Run, RunStatus

    auth = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=f"{url}/api", headers=auth) as api:
        cid = (await api.post("/companies", json={"name": "Streams"})).json()["id"]
        agent = (
            await api.post(f"/companies/{cid}/agents", json={"name": "a", "provider": "fixture"})
        ).json()
        issue = (await api.post(f"/companies/{cid}/issues", json={"title": "t"})).json()
        chat = await api.post(
            f"/companies/{cid}/conversations",
            json={"issue_id": issue["id"], "agent_id": agent["id"], "title": "c"},
        )
        assert chat.status_code == 201, chat.text
    engine = create_engine(database_url, pool_size=1)
    try:
        async with create_session_factory(engine).begin() as session:
            run = Run(
                id=uuid.uuid4(),
                company_id=uuid.UUID(cid),
                agent_id=uuid.UUID(agent["id"]),
                issue_id=uuid.UUID(issue["id"]),
                provider="fixture",
                status=RunStatus.RUNNING,
            )
            session.add(run)
    finally:
        await engine.dispose()
    base = f"/api/companies/{cid}"
    return {
        "run": f"{base}/runs/{run.id}/events/stream?wait=300",
        "chat": f"{base}/conversations/{chat.json()['id']}/messages/stream?wait=300",
    }


class Stream:
    """One event stream on a connection of its own: its status, then held until closed."""

    def __init__(self, url: str, path: str, key: str) -> None:
        self.url, self.path, self.key = urlsplit(url), path, key
        self.writer: asyncio.StreamWriter | None = None
        self.status, self.head, self.body = 0, "", b""

    async def open(self) -> Stream:
        reader, self.writer = await asyncio.open_connection(self.url.hostname, self.url.port)
        self.writer.write(
            f"GET {self.path} HTTP/1.1\r\nHost: {self.url.netloc}\r\n"
            f"Authorization: Bearer {self.key}\r\nAccept: text/event-stream\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        self.status, self.head = int(head.split(b" ", 2)[1]), head.decode().lower()
        if self.status == 200:
            await reader.readuntil(b"paperclip")  # the stream's first event: it is open
        else:
            length = int(self.head.split("content-length: ", 1)[1].split("\r\n", 1)[0])
            self.body = await reader.readexactly(length)
        return self

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await asyncio.gather(self.writer.wait_closed(), return_exceptions=True)

    def refusal(self) -> dict[str, str]:
        """The refusal's body (a ``429`` with ``Retry-After``)."""
        assert self.status == 429, self.status
        assert "retry-after: 5" in self.head
        return dict(json.loads(self.body))
