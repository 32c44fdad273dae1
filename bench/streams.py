"""A control plane's memory under many event streams, and after they end.

Three measurements on one server (``paperclip serve --no-runner``, the no-login
mode, so every stream is the local operator's), each stream a run event
stream of a running run (``GET …/runs/{id}/events/stream``), on a connection of
its own:

- burst: ``--streams`` streams asked for at once: the cap's worth opens
  (``PAPERCLIP_MAX_STREAMS_PER_KEY``, 32 by default), the rest are refused
  with ``429``; all closed;
- waves: ``--streams`` streams opened and closed a cap's worth at a time;
- uncapped: with the caps raised past ``--streams`` (a second server), that
  many streams open at once, then closed: what the caps now prevent.

Reports the server's RSS before, with the streams open, and once it settles
after each. Usage: python bench/streams.py [--streams 2000] [--json]
Exits 1 when the capped runs keep more than ``--keep-mb`` (default 20), 2 when
the measurement is invalid (a stream neither opened nor refused, more open
than the cap, fewer than asked with the caps raised).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import control_plane, run
from verdict import Target, Verdict, sample_problems

CAP = 32  # PAPERCLIP_MAX_STREAMS_PER_KEY's default


async def seed_running_run(url: str, database_url: str) -> str:
    """A run that never ends (no runner): the path of its stream, which stays open."""
    from paperclip.db.engine import create_engine, create_session_factory
    from paperclip.models import Run, RunStatus

    async with httpx.AsyncClient(base_url=f"{url}/api", timeout=30) as api:
        cid = (await api.post("/companies", json={"name": "Streams"})).json()["id"]
        agent = (
            await api.post(f"/companies/{cid}/agents", json={"name": "a", "provider": "codex"})
        ).json()
        issue = (await api.post(f"/companies/{cid}/issues", json={"title": "t"})).json()
    engine = create_engine(database_url, pool_size=1)
    try:
        async with create_session_factory(engine).begin() as session:
            run_id = uuid.uuid4()
            session.add(
                Run(
                    id=run_id,
                    company_id=uuid.UUID(cid),
                    agent_id=uuid.UUID(agent["id"]),
                    issue_id=uuid.UUID(issue["id"]),
                    provider="codex",
                    status=RunStatus.RUNNING,
                )
            )
    finally:
        await engine.dispose()
    return f"/api/companies/{cid}/runs/{run_id}/events/stream?wait=300"


async def open_stream(url: str, path: str) -> tuple[int, asyncio.StreamWriter]:
    """Ask for one stream; its status and its connection (open until closed)."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if status == 200:
        await reader.readuntil(b"paperclip run events")  # the stream's first event
    return status, writer


async def close_all(writers: list[asyncio.StreamWriter]) -> None:
    for writer in writers:
        writer.close()
    await asyncio.gather(*(w.wait_closed() for w in writers), return_exceptions=True)


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


async def settle(pid: int, seconds: float = 20) -> float:
    """The server's RSS once it stops moving (or after ``seconds``)."""
    deadline, last = time.monotonic() + seconds, rss_mb(pid)
    while time.monotonic() < deadline:
        await asyncio.sleep(1)
        now = rss_mb(pid)
        if abs(now - last) < 0.5:
            return now
        last = now
    return last


async def at_once(url: str, path: str, count: int) -> tuple[list[int], list[asyncio.StreamWriter]]:
    opened = []
    for start in range(0, count, 100):  # a hundred connections at a time
        batch = min(100, count - start)
        opened += await asyncio.gather(*(open_stream(url, path) for _ in range(batch)))
    return [s for s, _ in opened], [w for _, w in opened]


async def in_waves(url: str, path: str, count: int) -> int:
    """Open and close ``count`` streams a cap's worth at a time; how many opened."""
    opened = 0
    while opened < count:
        wave = await asyncio.gather(*(open_stream(url, path) for _ in range(CAP)))
        opened += sum(1 for status, _ in wave if status == 200)
        await close_all([w for _, w in wave])
        await asyncio.sleep(0.05)  # the server sees the ends and gives the places back
    return opened


async def capped(url: str, pid: int, database_url: str, streams: int) -> dict:
    path = await seed_running_run(url, database_url)
    statuses, writers = await at_once(url, path, 40)  # the server's own caches
    await close_all(writers)
    before = await settle(pid)
    statuses, writers = await at_once(url, path, streams)
    burst_open = rss_mb(pid)
    await close_all(writers)
    after_burst = await settle(pid)
    waves = await in_waves(url, path, streams)
    after_waves = await settle(pid)
    return {
        "before_mb": round(before, 1),
        "burst": {
            "asked": streams,
            "opened": statuses.count(200),
            "refused_429": statuses.count(429),
            "open_mb": round(burst_open, 1),
            "after_mb": round(after_burst, 1),
        },
        "waves": {"opened": waves, "after_mb": round(after_waves, 1)},
    }


async def uncapped(url: str, pid: int, database_url: str, streams: int) -> dict:
    path = await seed_running_run(url, database_url)
    statuses, writers = await at_once(url, path, 40)
    await close_all(writers)
    before = await settle(pid)
    statuses, writers = await at_once(url, path, streams)
    opened = rss_mb(pid)
    await close_all(writers)
    after = await settle(pid)
    return {
        "opened": statuses.count(200),
        "before_mb": round(before, 1),
        "open_mb": round(opened, 1),
        "after_mb": round(after, 1),
    }


def problems_of(figures: dict[str, Any], streams: int) -> list[str]:
    """What makes the figures say nothing: a stream neither opened nor refused by the cap,
    more open than the cap, fewer open than asked with the caps raised, a size not above 0."""
    problems = []
    burst, waves = figures["capped"]["burst"], figures["capped"]["waves"]
    if burst["opened"] + burst["refused_429"] != streams:
        problems.append(
            f"capped burst: {streams} asked, {burst['opened']} opened and"
            f" {burst['refused_429']} refused (429): the rest answered otherwise"
        )
    if not 0 < burst["opened"] <= CAP:
        problems.append(f"capped burst: {burst['opened']} open, the cap is {CAP}")
    if waves["opened"] < streams:
        problems.append(f"waves: {waves['opened']} of {streams} opened")
    if figures["uncapped"]["opened"] != streams:
        problems.append(f"caps raised: {figures['uncapped']['opened']} of {streams} opened")
    sizes = {
        f"{run} {moment}": value
        for run, moments in (
            ("capped", figures["capped"]),
            ("burst", burst),
            ("waves", waves),
            ("uncapped", figures["uncapped"]),
        )
        for moment, value in moments.items()
        if moment.endswith("_mb")
    }
    return problems + sample_problems("RSS (MB)", sizes, list(sizes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--keep-mb", type=float, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with control_plane() as cp:
        figures = {"capped": run(capped(cp.url, cp.server.proc.pid, cp.database_url, args.streams))}
    raised = str(args.streams * 2)
    env = {"PAPERCLIP_MAX_STREAMS_PER_KEY": raised, "PAPERCLIP_MAX_STREAMS_PER_ADDRESS": raised}
    with control_plane(env) as cp:
        figures["uncapped"] = run(
            uncapped(cp.url, cp.server.proc.pid, cp.database_url, args.streams)
        )
    capped_figures = figures["capped"]
    kept = capped_figures["waves"]["after_mb"] - capped_figures["before_mb"]
    verdict = Verdict(
        "streams",
        [
            Target(
                "RSS kept after capped bursts and waves",
                f"{kept:.1f} MB",
                f"{capped_figures['before_mb']} MB before",
                None,
                f"at most {args.keep_mb:g} MB",
                kept <= args.keep_mb,
            )
        ],
        problems_of(figures, args.streams),
    )
    if args.json:
        print(json.dumps({**figures, "verdict": verdict.as_json()}))
    else:
        burst, waves, free = capped_figures["burst"], capped_figures["waves"], figures["uncapped"]
        print(
            f"capped: RSS {capped_figures['before_mb']} MB before; {burst['asked']} at once: "
            f"{burst['opened']} open, {burst['refused_429']} refused, {burst['open_mb']} MB, "
            f"{burst['after_mb']} MB after; {waves['opened']} in waves: {waves['after_mb']} MB after\n"
            f"uncapped: {free['opened']} open at once: {free['before_mb']} -> {free['open_mb']} MB, "
            f"{free['after_mb']} MB after"
        )
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
