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
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from paperclip.runner.outbox import Outbox  # noqa: E402
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
    """A runner process that hosts no provider: ``on_start`` decides what a started turn does.

    It speaks the protocol as ``paperclip/runner/runtime.py`` does, across as many
    connections as it opens (one ``runner_instance`` for its life):

    - its position, the last control-plane ``seq`` it handled, is kept across
      connections and sent as ``received_seq`` in ``hello``, with the runs it
      still hosts and their calls still waiting, so a reconnect resumes where the
      last connection stopped;
    - a message at or below its position (a resent one) is dropped, not handled
      again, and its position acknowledged again (``dropped`` lists their seqs);
    - one cumulative ack per burst of messages, once the frames already received
      are handled;
    - its own data messages are numbered and kept in an outbox (the runner's) until
      acknowledged, and replayed after the next ``welcome``;
    - unsequenced results (``wire.FEATURE_UNSEQUENCED_RESULTS``): a ``tool_result``
      with ``seq`` 0 is handled whatever its position, and never acknowledged.
    """

    def __init__(self, base_url: str, credential: str) -> None:
        self.base_url, self.credential = base_url, credential
        self.instance = f"bench-{uuid.uuid4().hex[:8]}"
        self.outbox = Outbox()
        self.received = 0
        self.dropped: list[int] = []
        self.runs: dict[uuid.UUID, wire.StartTurn] = {}  # run_id -> its current turn
        self.calls: dict[str, tuple[uuid.UUID, asyncio.Future[wire.ToolResult]]] = {}
        self.on_start: Callable[[wire.StartTurn], Awaitable[None] | None] = lambda start: None
        self.ws: Any = None
        self.acking: asyncio.Future[None] | None = None
        self.reader: asyncio.Task[None] | None = None

    def hello(self, providers: tuple[str, ...]) -> wire.Hello:
        return wire.Hello(
            protocol=wire.PROTOCOL,
            runner_instance=self.instance,
            providers=list(providers),
            received_seq=self.received,
            runs=[
                wire.HostedRun(
                    run_id=run_id,
                    turn=start.turn,
                    pending_calls=sorted(c for c, (r, _) in self.calls.items() if r == run_id),
                )
                for run_id, start in self.runs.items()
            ],
            features=[wire.FEATURE_UNSEQUENCED_RESULTS],
        )

    async def open(self, providers: tuple[str, ...] = ("codex",)) -> None:
        self.ws = await websockets.connect(
            self.base_url.replace("http", "ws", 1) + wire.PATH,
            additional_headers={"Authorization": f"Bearer {self.credential}"},
            max_size=None,
            compression=None,
        )
        self.acking = None
        await self.ws.send(wire.encode(self.hello(providers)))
        welcome = wire.decode_to_runner(await self.ws.recv())
        assert isinstance(welcome, wire.Welcome), welcome
        self.outbox.acknowledged(welcome.acked_seq)
        for message in self.outbox.after(0):  # what the control plane has not acknowledged
            await self.ws.send(wire.encode(message))
        self.reader = asyncio.create_task(self.read())

    async def read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in self.ws:
                await self.receive(wire.decode_to_runner(raw))

    async def receive(self, message: wire.ToRunner) -> None:
        """One message from the control plane, as the runner's ``_receive``."""
        if isinstance(message, wire.Ack):
            self.outbox.acknowledged(message.upto)
            return
        if not isinstance(message, wire.DataMessage):
            return
        if isinstance(message, wire.ToolResult) and message.seq == 0:
            self.resolve(message)  # unsequenced: its call id dedupes it, nothing to acknowledge
            return
        if message.seq > self.received:
            await self.handle(message)
            self.received = message.seq
        else:
            self.dropped.append(message.seq)  # resent: handled once already
        if self.acking is None or self.acking.done():
            self.acking = asyncio.ensure_future(self.acknowledge())

    async def handle(self, message: wire.DataMessage) -> None:
        if isinstance(message, wire.StartTurn):
            hosted = self.runs.get(message.run_id)
            if hosted is not None and hosted.turn >= message.turn:
                return  # a turn this process runs (or ran): started at most once
            self.runs[message.run_id] = message
            handled = self.on_start(message)
            if handled is not None:
                await handled
        elif isinstance(message, wire.ToolResult):
            self.resolve(message)
        elif isinstance(message, wire.Close):
            self.runs.pop(message.run_id, None)

    def resolve(self, result: wire.ToolResult) -> None:
        waiting = self.calls.pop(result.call_id, None)
        if waiting is not None and not waiting[1].done():
            waiting[1].set_result(result)

    async def acknowledge(self) -> None:
        await asyncio.sleep(0)  # let the receive loop drain what already arrived
        with contextlib.suppress(websockets.ConnectionClosed):
            await self.ws.send(wire.encode(wire.Ack(upto=self.received)))

    async def send(self, message: wire.DataMessage) -> None:
        """Number the message, keep it until acknowledged, send it."""
        numbered = await self.outbox.number(message)
        with contextlib.suppress(websockets.ConnectionClosed):
            await self.ws.send(wire.encode(numbered))

    async def call(
        self, run_id: uuid.UUID, tool: str, arguments: dict[str, Any], within: float = 60
    ) -> wire.ToolResult | None:
        """The tool's result, paired by its call id (None when none came ``within`` seconds)."""
        call_id = uuid.uuid4().hex
        future = asyncio.get_running_loop().create_future()
        self.calls[call_id] = (run_id, future)
        await self.send(
            wire.ToolCall(
                seq=0,
                run_id=run_id,
                call_id=call_id,
                tool=tool,
                arguments=arguments,
                token=self.runs[run_id].token,
            )
        )
        try:
            return await asyncio.wait_for(future, within)
        except TimeoutError:
            return None

    async def close(self) -> None:
        await self.ws.close()
        if self.reader is not None:
            await self.reader


@dataclass(frozen=True)
class Arrival:
    """A ``start_turn`` the peer handled, and when (``time.perf_counter``)."""

    at: float
    start: wire.StartTurn


class StartTurns:
    """The ``start_turn``s a peer hands over (its ``on_start``), in order, found by issue.

    A benchmark waits for the turn of the issue it woke, never for the next one
    to arrive: one stray message cannot shift its samples.
    """

    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []
        self._waiting: dict[uuid.UUID, asyncio.Future[Arrival]] = {}

    def __call__(self, start: wire.StartTurn) -> None:
        arrival = Arrival(time.perf_counter(), start)
        self.arrivals.append(arrival)
        waiter = self._waiting.get(start.issue_id) if start.issue_id is not None else None
        if waiter is not None and not waiter.done():
            waiter.set_result(arrival)

    def first(self, issue_id: uuid.UUID) -> Arrival | None:
        return next((a for a in self.arrivals if a.start.issue_id == issue_id), None)

    async def of(self, issue_id: uuid.UUID, within: float) -> Arrival | None:
        """The first ``start_turn`` of ``issue_id``'s run (None when none came ``within`` seconds)."""
        if (arrival := self.first(issue_id)) is not None:
            return arrival
        waiter = asyncio.get_running_loop().create_future()
        self._waiting[issue_id] = waiter
        try:
            return await asyncio.wait_for(waiter, within)
        except TimeoutError:
            return None
        finally:
            self._waiting.pop(issue_id, None)


def run(main: Any) -> Any:
    """Both sides on the loop a runner uses (uvloop where installed): the baseline too, for fairness."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def percentile(values: list[float], p: float) -> float:
    """The ``p``th percentile (nearest rank), or NaN for no value."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]
