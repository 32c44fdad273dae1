"""Journaled tool round trips per second, as a ratio of raw INSERT+COMMIT per second.

Both are measured in the same run against the same PostgreSQL, so the ratio
holds on a noisy, shared machine where absolute rates do not.

- baseline: one connection doing single-row ``INSERT`` + ``COMMIT`` in a loop;
- journaled: a real control plane (``paperclip serve --no-runner``) and a
  scripted runner peer speaking the runner protocol over its WebSocket; each
  round trip is one ``report_progress`` tool call (a write tool: journaled
  before dispatch, effect + receipt + result in one fenced transaction, reply
  through the outbox) from 1 and from 8 concurrent runs.

Usage: python bench/tool_roundtrip.py [--calls N] [--json]
Uses PAPERCLIP_DATABASE_URL when set, else an embedded PostgreSQL in a temp dir.
Exits 1 when the ratio at 8 concurrent runs is under the target (0.4).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from paperclip.wire import messages as wire  # noqa: E402
from tests.support.processes import ServerProcess, free_port  # noqa: E402

TARGET = 0.4


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


async def baseline_inserts(url: str, seconds: float) -> float:
    conn = await connect(url)
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_baseline (id bigserial PRIMARY KEY, v text)"
        )
        n, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            async with conn.transaction():
                await conn.execute("INSERT INTO bench_baseline (v) VALUES ($1)", "x")
            n += 1
        return n / (time.perf_counter() - started)
    finally:
        await conn.execute("DROP TABLE IF EXISTS bench_baseline")
        await conn.close()


async def vacuum(url: str) -> None:
    """What pgbench does before a run: no dead rows from earlier phases, fresh planner statistics.

    A short benchmark otherwise runs entirely before autovacuum's first pass, on
    plans made for empty tables, which no long-lived server sees.
    """
    conn = await connect(url)
    try:
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


class RunnerPeer:
    """A runner that hosts no provider: it answers start_turn by calling tools itself."""

    def __init__(self, base_url: str, credential: str) -> None:
        self.base_url, self.credential = base_url, credential
        self.seq = 0
        self.runs: dict[uuid.UUID, str] = {}  # run_id -> token
        self.started = asyncio.Event()
        self.results: dict[str, asyncio.Future[wire.ToolResult]] = {}
        self.ws: Any = None
        self.received = 0
        self.acking: asyncio.Future[None] | None = None

    async def open(self, expected_runs: int) -> None:
        url = self.base_url.replace("http", "ws", 1) + wire.PATH
        self.ws = await websockets.connect(
            url,
            additional_headers={"Authorization": f"Bearer {self.credential}"},
            max_size=None,
            compression=None,
        )
        await self.ws.send(
            wire.encode(
                wire.Hello(
                    protocol=wire.PROTOCOL,
                    runner_instance=f"bench-{uuid.uuid4().hex[:8]}",
                    providers=["codex"],
                )
            )
        )
        self.expected = expected_runs
        self.reader = asyncio.create_task(self.read())

    async def read(self) -> None:
        async for raw in self.ws:
            message = wire.decode_to_runner(raw)
            if not isinstance(message, wire.DataMessage):
                continue
            if isinstance(message, wire.StartTurn):
                self.runs[message.run_id] = message.token
                if len(self.runs) >= self.expected:
                    self.started.set()
            elif isinstance(message, wire.ToolResult):
                future = self.results.pop(message.call_id, None)
                if future is not None:
                    future.set_result(message)
            # Like the runner: one cumulative ack per burst of messages.
            self.received = message.seq
            if self.acking is None or self.acking.done():
                self.acking = asyncio.ensure_future(self.acknowledge())

    async def acknowledge(self) -> None:
        await asyncio.sleep(0)
        await self.ws.send(wire.encode(wire.Ack(upto=self.received)))

    async def call(
        self, run_id: uuid.UUID, tool: str, arguments: dict[str, Any]
    ) -> wire.ToolResult:
        call_id = uuid.uuid4().hex
        future = asyncio.get_running_loop().create_future()
        self.results[call_id] = future
        self.seq += 1
        await self.ws.send(
            wire.encode(
                wire.ToolCall(
                    seq=self.seq,
                    run_id=run_id,
                    call_id=call_id,
                    tool=tool,
                    arguments=arguments,
                    token=self.runs[run_id],
                )
            )
        )
        return await future


async def journaled_round_trips(peer: RunnerPeer, runs: list[uuid.UUID], calls: int) -> float:
    async def one_run(run_id: uuid.UUID) -> None:
        for i in range(calls):
            result = await peer.call(run_id, "report_progress", {"summary": f"step {i}"})
            assert not result.is_error, result

    started = time.perf_counter()
    await asyncio.gather(*(one_run(r) for r in runs))
    return len(runs) * calls / (time.perf_counter() - started)


def setup(base: str, runs: int) -> None:
    with httpx.Client(base_url=f"{base}/api", timeout=30) as api:
        company = api.post("/companies", json={"name": f"Bench {uuid.uuid4().hex[:6]}"}).json()
        agent = api.post(
            f"/companies/{company['id']}/agents", json={"name": "bench", "provider": "codex"}
        ).json()
        for i in range(runs):
            api.post(
                f"/companies/{company['id']}/issues",
                json={"title": f"bench {i}", "assignee_agent_id": agent["id"]},
            ).raise_for_status()


async def measure(base: str, credential: str, database_url: str, runs: int, calls: int) -> float:
    peer = RunnerPeer(base, credential)
    await peer.open(runs)
    setup(base, runs)
    await asyncio.wait_for(peer.started.wait(), 60)
    run_ids = list(peer.runs)[:runs]
    await journaled_round_trips(peer, run_ids, max(3, calls // 10))  # warm-up
    await vacuum(database_url)
    rate = await journaled_round_trips(peer, run_ids, calls)
    await peer.ws.close()
    return rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=150, help="round trips per run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="paperclip-bench-", dir="/var/tmp") as tmp:
        os.chmod(tmp, 0o755)
        env = {
            "PAPERCLIP_DATA_DIR": tmp,
            "PAPERCLIP_PORT": str(free_port()),
            "PAPERCLIP_LOG_LEVEL": "WARNING",
        }
        server = ServerProcess(env, Path(tmp) / "serve.log", "--no-runner").start()
        try:
            database_url = os.environ.get("PAPERCLIP_DATABASE_URL") or embedded_url(tmp)
            credential = json.loads(
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "paperclip",
                        "runners",
                        "create",
                        f"bench-{uuid.uuid4().hex[:6]}",
                        "--json",
                    ],
                    env={**os.environ, **env},
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )["credential"]
            figures: dict[str, float] = {}
            for concurrency in (1, 8):
                baseline = run(baseline_inserts(database_url, 3.0))
                rate = run(measure(server.url, credential, database_url, concurrency, args.calls))
                figures[f"baseline_inserts_per_s_{concurrency}"] = baseline
                figures[f"tool_round_trips_per_s_{concurrency}"] = rate
                figures[f"ratio_{concurrency}"] = rate / baseline
        finally:
            server.terminate()
            server.stop()
    if args.json:
        print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
    else:
        for concurrency in (1, 8):
            print(
                f"{concurrency} run(s): {figures[f'tool_round_trips_per_s_{concurrency}']:8.1f} journaled round trips/s"
                f"  vs {figures[f'baseline_inserts_per_s_{concurrency}']:8.1f} raw INSERT+COMMIT/s"
                f"  ratio {figures[f'ratio_{concurrency}']:.2f}"
            )
        print(f"target at 8 runs: >= {TARGET}")
    return 0 if figures["ratio_8"] >= TARGET else 1


def run(main: Any) -> Any:
    """Both sides on the loop a runner uses (uvloop where installed): the baseline too, for fairness."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def embedded_url(data_dir: str) -> str:
    """The URL of the embedded server the control plane started in ``data_dir``."""
    from paperclip.db.embedded import DATABASE_NAME

    return f"postgresql://postgres:@/{DATABASE_NAME}?host={Path(data_dir) / 'pgdata'}"


if __name__ == "__main__":
    raise SystemExit(main())
