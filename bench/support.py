"""What the benchmarks share: a control plane on a scratch database, and a scripted runner peer.

The peer speaks the runner protocol with the typed wire messages
(``paperclip.wire``) but hosts no provider: a benchmark drives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from paperclip.wire import messages as wire  # noqa: E402
from tests.support.processes import ServerProcess, free_port  # noqa: E402


async def connect(url: str) -> asyncpg.Connection:
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    return await asyncpg.connect(
        user=parsed.username,
        password=parsed.password or None,
        database=parsed.database,
        host=parsed.query.get("host", parsed.host),
        port=parsed.port,
    )


def embedded_url(data_dir: str) -> str:
    """The URL of the embedded server the control plane started in ``data_dir``."""
    from paperclip.db.embedded import DATABASE_NAME

    return f"postgresql://postgres:@/{DATABASE_NAME}?host={Path(data_dir) / 'pgdata'}"


class ControlPlane:
    """``paperclip serve --no-runner`` on a temporary data dir (or PAPERCLIP_DATABASE_URL)."""

    def __init__(self, tmp: str, env: dict[str, str] | None = None) -> None:
        self.env = {
            "PAPERCLIP_DATA_DIR": tmp,
            "PAPERCLIP_PORT": str(free_port()),
            "PAPERCLIP_LOG_LEVEL": "WARNING",
            # A benchmark's clients are its own process on a machine of its own: they measure
            # the server, not the operator's sign-in (a comparison of one short string).
            "PAPERCLIP_OPERATOR_TOKEN_REQUIRED": "false",
            **(env or {}),
        }
        self.server = ServerProcess(self.env, Path(tmp) / "serve.log", "--no-runner").start()
        self.url = self.server.url
        self.database_url = os.environ.get("PAPERCLIP_DATABASE_URL") or embedded_url(tmp)

    def runner_credential(self) -> str:
        name = f"bench-{uuid.uuid4().hex[:6]}"
        out = subprocess.run(
            [sys.executable, "-m", "paperclip", "runners", "create", name, "--json"],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return str(json.loads(out)["credential"])

    def stop(self) -> None:
        self.server.terminate()
        self.server.stop()


@contextlib.contextmanager
def control_plane(env: dict[str, str] | None = None) -> Iterator[ControlPlane]:
    """A control plane for the block; ``env`` adds settings (``PAPERCLIP_*``)."""
    with tempfile.TemporaryDirectory(prefix="paperclip-bench-", dir="/var/tmp") as tmp:
        os.chmod(tmp, 0o755)
        cp = ControlPlane(tmp, env)
        try:
            yield cp
        finally:
            cp.stop()


class RunnerPeer:
    """A runner that hosts no provider: ``on_start`` decides what a started turn does.

    It speaks what the runner speaks beyond the base protocol that matters to a
    tool call's round trip: unsequenced results (``wire.FEATURE_UNSEQUENCED_RESULTS``).
    """

    def __init__(self, base_url: str, credential: str) -> None:
        self.base_url, self.credential = base_url, credential
        self.seq = 0
        self.runs: dict[uuid.UUID, str] = {}  # run_id -> token
        self.results: dict[str, asyncio.Future[wire.ToolResult]] = {}
        self.on_start: Callable[[wire.StartTurn], Awaitable[None] | None] = lambda start: None
        self.ws: Any = None
        self.received = 0
        self.acking: asyncio.Future[None] | None = None
        self.reader: asyncio.Task[None] | None = None

    async def open(self, providers: tuple[str, ...] = ("codex",)) -> None:
        self.ws = await websockets.connect(
            self.base_url.replace("http", "ws", 1) + wire.PATH,
            additional_headers={"Authorization": f"Bearer {self.credential}"},
            max_size=None,
            compression=None,
        )
        await self.ws.send(
            wire.encode(
                wire.Hello(
                    protocol=wire.PROTOCOL,
                    runner_instance=f"bench-{uuid.uuid4().hex[:8]}",
                    providers=list(providers),
                    features=[wire.FEATURE_UNSEQUENCED_RESULTS],
                )
            )
        )
        welcome = wire.decode_to_runner(await self.ws.recv())
        assert isinstance(welcome, wire.Welcome), welcome
        self.reader = asyncio.create_task(self.read())

    async def read(self) -> None:
        async for raw in self.ws:
            message = wire.decode_to_runner(raw)
            if not isinstance(message, wire.DataMessage):
                continue
            if isinstance(message, wire.StartTurn):
                self.runs[message.run_id] = message.token
                handled = self.on_start(message)
                if handled is not None:
                    await handled
            elif isinstance(message, wire.ToolResult):
                future = self.results.pop(message.call_id, None)
                if future is not None:
                    future.set_result(message)
                if message.seq == 0:
                    continue  # unsequenced, like the runner's: nothing to acknowledge
            # Like the runner: one cumulative ack per burst of messages.
            self.received = message.seq
            if self.acking is None or self.acking.done():
                self.acking = asyncio.ensure_future(self.acknowledge())

    async def acknowledge(self) -> None:
        await asyncio.sleep(0)
        await self.ws.send(wire.encode(wire.Ack(upto=self.received)))

    async def send(self, message: wire.DataMessage) -> None:
        self.seq += 1
        await self.ws.send(wire.encode(_numbered(message, self.seq)))

    async def call(
        self, run_id: uuid.UUID, tool: str, arguments: dict[str, Any]
    ) -> wire.ToolResult:
        call_id = uuid.uuid4().hex
        future = asyncio.get_running_loop().create_future()
        self.results[call_id] = future
        await self.send(
            wire.ToolCall(
                seq=0,
                run_id=run_id,
                call_id=call_id,
                tool=tool,
                arguments=arguments,
                token=self.runs[run_id],
            )
        )
        return await future

    async def close(self) -> None:
        await self.ws.close()


def _numbered(message: wire.DataMessage, seq: int) -> wire.DataMessage:
    import msgspec

    return msgspec.structs.replace(message, seq=seq)


def run(main: Any) -> Any:
    """Both sides on the loop a runner uses (uvloop where installed): the baseline too, for fairness."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]
