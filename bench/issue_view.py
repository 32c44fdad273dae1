"""Issue views per second through the API, as a ratio of the same two queries on bare asyncpg.

One view is what a board or a client does to show an issue: ``GET`` the issue,
then ``GET`` its comments (one page of 50). Both are measured in the same run
against the same PostgreSQL, with the same number of concurrent clients:

- baseline: each client its own asyncpg connection, running the issue's
  ``SELECT`` and the comment page's ``SELECT`` and turning the rows into JSON
  (``json.dumps``), in a loop;
- API: a real control plane (``paperclip serve --no-runner``) and HTTP/1.1
  keep-alive clients (a lean one of ours, so the client's own CPU, on the same
  machine, stays small), each making the two ``GET``s in a loop.

Modes: ``authenticated`` (each request carries a company API key, checked per
request, as a deployed server runs) and ``local`` (the no-login mode).

Usage: python bench/issue_view.py [--clients 8] [--seconds 5] [--mode authenticated|local] [--json]
Uses PAPERCLIP_DATABASE_URL when set, else an embedded PostgreSQL in a temp dir.
Exits 1 when the ratio is under the target (0.5), 2 when the measurement is
invalid (a view that showed another issue, another page or an error; a round
without a rate).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import connect, control_plane, run
from verdict import Target, Verdict, median, ratio_of, value_problems

TARGET = 0.5
COMMENTS = 50
PAPERCLIP = [sys.executable, "-m", "paperclip"]
VIEWER = ["--role", "viewer", "--json"]

ISSUE_SQL = (
    "SELECT id, company_id, identifier, number, title, description, status, priority,"
    " assignee_agent_id, parent_id, created_at, updated_at"
    " FROM issues WHERE id = $1 AND company_id = $2"
)
COMMENTS_SQL = (
    "SELECT id, company_id, issue_id, author_agent_id, author_user_id, body, revision,"
    " created_by_run_id, edited_at, deleted_at, created_at"
    " FROM comments WHERE company_id = $1 AND issue_id = $2"
    " ORDER BY created_at, id LIMIT 51"
)


def _jsonable(value: object) -> object:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


async def baseline_views(
    url: str, company_id: uuid.UUID, issue_id: uuid.UUID, clients: int, seconds: float
) -> tuple[float, int]:
    """Views per second, and how many showed another issue or another page (none should)."""
    conns = [await connect(url) for _ in range(clients)]
    started = time.perf_counter()
    wrong = 0

    async def one(conn) -> int:
        nonlocal wrong
        issue_stmt = await conn.prepare(ISSUE_SQL)
        comments_stmt = await conn.prepare(COMMENTS_SQL)
        n = 0
        while time.perf_counter() - started < seconds:
            issue = await issue_stmt.fetchrow(issue_id, company_id)
            json.dumps(dict(issue), default=_jsonable)
            rows = await comments_stmt.fetch(company_id, issue_id)
            json.dumps({"items": [dict(r) for r in rows[:COMMENTS]]}, default=_jsonable)
            if issue["id"] != issue_id or len(rows) != COMMENTS:
                wrong += 1
            n += 1
        return n

    try:
        counts = await asyncio.gather(*(one(conn) for conn in conns))
        return sum(counts) / (time.perf_counter() - started), wrong
    finally:
        for conn in conns:
            await conn.close()


class KeepAlive:
    """One HTTP/1.1 keep-alive connection: ``GET`` and read the whole answer (Content-Length)."""

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.head = f"Host: {host}:{port}\r\n{extra}\r\n"

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def get(self, path: str) -> bytes:
        self.writer.write(f"GET {path} HTTP/1.1\r\n{self.head}".encode())
        status = await self.reader.readline()
        if b" 200 " not in status:
            raise RuntimeError(f"GET {path}: {status!r}")
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return await self.reader.readexactly(length)

    async def close(self) -> None:
        self.writer.close()


async def api_views(
    base: str,
    headers: dict[str, str],
    company_id: uuid.UUID,
    issue_id: uuid.UUID,
    clients: int,
    seconds: float,
) -> tuple[float, int]:
    """Views per second, and how many answered another issue, another page or an error
    (a client stops at its first error: its connection's state is unknown)."""
    host, _, port = base.removeprefix("http://").partition(":")
    conns = [KeepAlive(host, int(port), headers) for _ in range(clients)]
    for conn in conns:
        await conn.open()
    issue_path = f"/api/companies/{company_id}/issues/{issue_id}"
    comments_path = f"{issue_path}/comments?limit={COMMENTS}"
    started = time.perf_counter()
    wrong = 0

    async def one(conn: KeepAlive) -> int:
        nonlocal wrong
        n = 0
        while time.perf_counter() - started < seconds:
            try:
                issue = json.loads(await conn.get(issue_path))
                page = json.loads(await conn.get(comments_path))
            except RuntimeError:
                wrong += 1
                break
            if issue["id"] != str(issue_id) or len(page["items"]) != COMMENTS:
                wrong += 1
            n += 1
        return n

    try:
        counts = await asyncio.gather(*(one(conn) for conn in conns))
        return sum(counts) / (time.perf_counter() - started), wrong
    finally:
        for conn in conns:
            await conn.close()


def create_key(env: dict[str, str], company_id: str) -> str:
    out = subprocess.run(
        [*PAPERCLIP, "keys", "create", "bench", "--company", company_id, *VIEWER],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return str(json.loads(out)["key"])


def seed(base: str, headers: dict[str, str]) -> tuple[str, str]:
    """A company, and an issue with 50 comments (by the operator, so no agent is woken)."""
    with httpx.Client(base_url=f"{base}/api", timeout=30, headers=headers) as api:
        company = api.post("/companies", json={"name": f"Bench {uuid.uuid4().hex[:6]}"})
        company_id = company.raise_for_status().json()["id"]
        issue = api.post(
            f"/companies/{company_id}/issues",
            json={"title": "A viewed issue", "description": "Read many times. " * 20},
        )
        issue_id = issue.raise_for_status().json()["id"]
        for i in range(COMMENTS):
            api.post(
                f"/companies/{company_id}/issues/{issue_id}/comments",
                json={"body": f"comment {i}: " + "some words of a comment " * 8},
            ).raise_for_status()
    return company_id, issue_id


def measure(args: argparse.Namespace) -> dict[str, Any]:
    env: dict[str, str] = {}
    if args.mode == "authenticated":
        env["PAPERCLIP_DEPLOYMENT_MODE"] = "authenticated"
    with control_plane(env) as cp:
        headers: dict[str, str] = {}
        if args.mode == "authenticated":
            admin = create_instance_key(cp.env)
            headers = {"Authorization": f"Bearer {admin}"}
        company_id, issue_id = seed(cp.url, headers)
        if args.mode == "authenticated":
            headers = {"Authorization": f"Bearer {create_key(cp.env, company_id)}"}
        company, issue = uuid.UUID(company_id), uuid.UUID(issue_id)
        run(api_views(cp.url, headers, company, issue, args.clients, 1.0))  # warm-up
        server = psutil.Process(cp.server.proc.pid)
        bases, apis, cpu_ms = [], [], []
        wrong = {"baseline": 0, "API": 0}
        for _ in range(args.rounds):  # interleaved: both see the same machine
            rate, bad = run(
                baseline_views(cp.database_url, company, issue, args.clients, args.seconds)
            )
            bases.append(rate)
            wrong["baseline"] += bad
            before = sum(server.cpu_times()[:2])
            rate, bad = run(api_views(cp.url, headers, company, issue, args.clients, args.seconds))
            apis.append(rate)
            wrong["API"] += bad
            views = apis[-1] * args.seconds
            cpu_ms.append(ratio_of((sum(server.cpu_times()[:2]) - before) * 1000, views))
    problems = value_problems("baseline views/s by round", bases, args.rounds)
    problems += value_problems("API views/s by round", apis, args.rounds)
    problems += value_problems("server CPU per view by round", cpu_ms, args.rounds)
    problems += [
        f"{side}: {n} views showed another issue, page or an error"
        for side, n in wrong.items()
        if n
    ]
    base, api = median(bases), median(apis)
    return {
        "clients": args.clients,
        "baseline_views_per_s": base,
        "api_views_per_s": api,
        "ratio": ratio_of(api, base),
        "ratios": [ratio_of(a, b) for a, b in zip(apis, bases, strict=True)],
        "server_cpu_ms_per_view": median(cpu_ms),
        "problems": problems,
    }


def create_instance_key(env: dict[str, str]) -> str:
    out = subprocess.run(
        [*PAPERCLIP, "keys", "create", "bench-admin", "--json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return str(json.loads(out)["key"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0, help="per round and side")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians")
    parser.add_argument("--mode", choices=("authenticated", "local"), default="authenticated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args)
    problems = figures.pop("problems")
    verdict = Verdict(
        "issue_view",
        [
            Target(
                f"issue views, {args.clients} clients, {args.mode}",
                f"{figures['api_views_per_s']:.1f}/s",
                f"{figures['baseline_views_per_s']:.1f}/s bare asyncpg",
                figures["ratio"],
                f"at least {TARGET:g}",
                figures["ratio"] >= TARGET,
            )
        ],
        problems,
    )
    if args.json:
        print(
            json.dumps({"mode": args.mode, **figures, "verdict": verdict.as_json()}, default=float)
        )
    else:
        print(
            f"{args.clients} clients, {args.mode}: {figures['api_views_per_s']:.1f} views/s"
            f" through the API vs {figures['baseline_views_per_s']:.1f}/s on bare asyncpg:"
            f" ratio {figures['ratio']:.2f} (rounds: "
            + ", ".join(f"{r:.2f}" for r in figures["ratios"])
            + f"); target >= {TARGET}; the server's CPU per view:"
            f" {figures['server_cpu_ms_per_view']:.2f} ms"
        )
    verdict.announce()
    return verdict.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
