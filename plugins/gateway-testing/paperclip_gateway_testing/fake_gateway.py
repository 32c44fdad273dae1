"""A scripted stand-in for an OpenClaw gateway, for tests.

    python -m paperclip_gateway_testing.fake_gateway --port P --token-env VAR --script-dir DIR
        [--mcp-url URL --mcp-token-env VAR] [--log PATH]

It speaks the part of the gateway WebSocket protocol (OpenClaw 2026.9, protocol
4) a Paperclip run uses: ``connect.challenge``, ``connect`` (the shared token
and the device's v3 signature are checked), ``agent`` (answered ``accepted``,
then with the run's final status; a repeated idempotency key gets the same
run, never a new one: its end, or ``in_flight`` and nothing more),
``agent.wait``, ``sessions.abort``. Runs of one session key run one after
another. The "model" follows ``DIR/<agent id>.json``
(:mod:`paperclip_gateway_testing.fake_run`) and calls the run's tools through the MCP
server the gateway is configured with (``--mcp-url``, bearer token in the
variable ``--mcp-token-env``), as a gateway's ``mcp.servers`` entry does.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import signal
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from paperclip_provider_kit.mcp_client import call_tool
from paperclip_provider_kit.script import fake_parser, parse_fake
from websockets.asyncio.server import ServerConnection, serve

from paperclip_gateway_testing import __version__
from paperclip_gateway_testing.fake_run import AgentRun

FAKE_VERSION = f"paperclip-fake-gateway {__version__}"


class FakeGateway:
    def __init__(self, args: argparse.Namespace, log: IO[str] | None) -> None:
        self.token = os.environ.get(args.token_env or "", "") or None
        self.script_dir: Path = args.script_dir
        self.mcp = (
            {
                "url": args.mcp_url,
                "headers": {
                    "Authorization": f"Bearer {os.environ.get(args.mcp_token_env or '', '')}"
                },
            }
            if args.mcp_url
            else None
        )
        self._log = log
        self.outboxes: dict[ServerConnection, asyncio.Queue[str]] = {}
        """Frames to each client, in order (events and answers alike)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.runs: dict[str, AgentRun] = {}
        self.sessions: dict[str, asyncio.Lock] = {}
        self.session_runs: dict[str, int] = {}
        self.refused: dict[str, str] = {}
        """Keys refused because the session was taken (``session_taken``), and the refusal."""
        self.responses = 0
        """Model calls so far (the next one's usage is derived from this index)."""

    def log(self, entry: Mapping[str, Any]) -> None:
        if self._log is not None:
            self._log.write(json.dumps(entry) + "\n")
            self._log.flush()

    def broadcast(self, event: str, payload: Mapping[str, Any]) -> None:
        frame = json.dumps({"type": "event", "event": event, "payload": payload})
        for outbox in list(self.outboxes.values()):
            outbox.put_nowait(frame)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # Connections

    async def connection(self, ws: ServerConnection) -> None:
        nonce = str(uuid.uuid4())
        ts = int(time.time() * 1000)
        await ws.send(
            json.dumps(
                {
                    "type": "event",
                    "event": "connect.challenge",
                    "payload": {"nonce": nonce, "ts": ts},
                }
            )
        )
        first = json.loads(await ws.recv())
        problem = self._check_connect(first, nonce, ts)
        if problem is not None:
            self.log({"type": "connect_refused", "reason": problem})
            await ws.send(
                json.dumps(
                    {
                        "type": "res",
                        "id": first.get("id"),
                        "ok": False,
                        "error": {"code": "INVALID_REQUEST", "message": problem},
                    }
                )
            )
            await ws.close()
            return
        hello = {
            "type": "hello-ok",
            "protocol": 4,
            "server": {"version": "fake", "connId": str(uuid.uuid4())},
            "features": {
                "methods": ["agent", "agent.wait", "sessions.abort"],
                "events": ["agent", "chat"],
            },
            "snapshot": {},
            "auth": {"role": "operator", "scopes": first["params"].get("scopes", [])},
            "policy": {
                "maxPayload": 26214400,
                "maxBufferedBytes": 52428800,
                "tickIntervalMs": 15000,
            },
        }
        await ws.send(
            json.dumps({"type": "res", "id": first.get("id"), "ok": True, "payload": hello})
        )
        outbox: asyncio.Queue[str] = asyncio.Queue()
        self.outboxes[ws] = outbox
        writer = asyncio.ensure_future(_write(ws, outbox))
        try:
            async for raw in ws:
                frame = json.loads(raw)
                self.log({"type": "received", "frame": frame})
                if frame.get("type") == "req":
                    self._spawn(self._request(ws, frame))
        finally:
            self.outboxes.pop(ws, None)
            writer.cancel()

    def _check_connect(self, frame: Mapping[str, Any], nonce: str, ts: int) -> str | None:
        params = frame.get("params") or {}
        if frame.get("method") != "connect":
            return "the first request must be connect"
        secret = (params.get("auth") or {}).get("token") or (params.get("auth") or {}).get(
            "password"
        )
        if self.token is not None and secret != self.token:
            return "unauthorized: gateway token mismatch"
        device = params.get("device") or {}
        client = params.get("client") or {}
        try:
            raw = base64.urlsafe_b64decode(device["publicKey"] + "==")
            if hashlib.sha256(raw).hexdigest() != device["id"]:
                return "device identity mismatch"
            if device.get("nonce") != nonce or device.get("signedAt") != ts:
                return "device nonce mismatch"
            payload = "|".join(
                [
                    "v3",
                    device["id"],
                    client.get("id", ""),
                    client.get("mode", ""),
                    params.get("role", ""),
                    ",".join(params.get("scopes", [])),
                    str(ts),
                    secret or "",
                    nonce,
                    str(client.get("platform", "")).lower(),
                    "",
                ]
            )
            signature = base64.urlsafe_b64decode(device["signature"] + "==")
            Ed25519PublicKey.from_public_bytes(raw).verify(signature, payload.encode())
        except (KeyError, ValueError, InvalidSignature):
            return "device signature invalid"
        return None

    # Requests

    async def _request(self, ws: ServerConnection, frame: Mapping[str, Any]) -> None:
        method, params, rid = frame.get("method"), frame.get("params") or {}, frame.get("id")

        async def answer(
            payload: Mapping[str, Any] | None = None,
            error: str | None = None,
            code: str = "INVALID_REQUEST",
        ) -> None:
            body: dict[str, Any] = {"type": "res", "id": rid, "ok": error is None}
            body["payload" if error is None else "error"] = (
                payload if error is None else {"code": code, "message": error}
            )
            outbox = self.outboxes.get(ws)
            if outbox is not None:  # a closed client misses its answers, as with a gateway
                outbox.put_nowait(json.dumps(body))

        if method == "agent":
            await self._agent(ws, params, answer)
        elif method == "agent.wait":
            run = self.runs.get(str(params.get("runId")))
            if run is None:
                await answer(error="unknown run")
                return
            try:
                await asyncio.wait_for(
                    run.done.wait(), float(params.get("timeoutMs", 30000)) / 1000
                )
            except TimeoutError:
                await answer({"runId": run.run_id, "status": "timeout"})
                return
            await answer(run.final(waited=True))
        elif method == "sessions.abort":
            run = self.runs.get(str(params.get("runId")))
            if run is not None and getattr(run, "task", None) is not None:
                run.task.cancel()  # type: ignore[attr-defined]
            await answer({"ok": True, "aborted": run is not None})
        else:
            await answer(error=f"unknown method {method} (not supported by the fake)")

    async def _agent(self, ws: ServerConnection, params: Mapping[str, Any], answer: Any) -> None:
        key = str(params.get("idempotencyKey") or "")
        if not key or not params.get("message"):
            await answer(error="message and idempotencyKey are required")
            return
        session = f"agent:main:{params.get('sessionKey') or 'main'}"
        if key in self.refused:  # as OpenClaw, a refused key keeps its refusal
            await answer(error=self.refused[key], code="UNAVAILABLE")
            return
        run = self.runs.get(key)
        if run is not None:  # the same request again: the same run
            # As OpenClaw: its end if it ended, else ``in_flight``, once; never a final later.
            await answer(
                run.final()
                if run.done.is_set()
                else {"runId": key, "status": "in_flight", "sessionKey": session}
            )
            return
        index = self.session_runs.get(session, 0)
        self.session_runs[session] = index + 1
        agent = str(params.get("agentId") or "main")
        steps = self._steps(agent, index)
        if steps and steps[0].get("session_taken"):
            await self._refuse_taken(key, session, answer)
            return
        run = AgentRun(
            run_id=key,
            session_key=session,
            steps=steps,
            emit=self.broadcast,
            call_tool=self._call_tool,
            drop=ws.close,
            model=agent,
            next_response=self._next_response,
            log=self.log,
        )
        self.runs[key] = run
        self.log(
            {
                "type": "run",
                "runId": key,
                "sessionKey": session,
                "extraSystemPrompt": params.get("extraSystemPrompt"),
            }
        )
        await answer(
            {
                "runId": key,
                "sessionKey": session,
                "agentId": agent,
                "status": "accepted",
                "acceptedAt": int(time.time() * 1000),
            }
        )
        lock = self.sessions.setdefault(session, asyncio.Lock())
        async with lock:  # a session's runs one after another
            run.task = asyncio.ensure_future(run.execute())  # type: ignore[attr-defined]
            await asyncio.wait({run.task})  # type: ignore[attr-defined]
        await answer(run.final())

    async def _refuse_taken(self, key: str, session: str, answer: Any) -> None:
        """Accepted, then refused as OpenClaw refuses a request whose session its restart
        recovery took as the request started (the run never starts)."""
        self.refused[key] = (
            f'Session "{session}" changed while starting work. Retry. | SESSION_WORK_START_CHANGED'
        )
        self.log({"type": "refused", "runId": key, "sessionKey": session})
        await answer({"runId": key, "sessionKey": session, "status": "accepted"})
        await answer(error=self.refused[key], code="UNAVAILABLE")

    def _next_response(self) -> int:
        index = self.responses
        self.responses += 1
        return index

    def _steps(self, agent: str, index: int) -> list[dict[str, Any]]:
        path = self.script_dir / f"{agent}.json"
        data = (
            json.loads(path.read_text())
            if path.is_file()
            else [{"fail": f"no script for agent {agent}"}]
        )
        turns = data["turns"] if isinstance(data, dict) else [data]
        return turns[min(index, len(turns) - 1)] if turns else []

    async def _call_tool(self, name: str, arguments: Mapping[str, Any]) -> tuple[bool, str]:
        if self.mcp is None:
            return False, "no MCP server is configured"
        ok, text = await call_tool(self.mcp, name, arguments)
        self.log(
            {
                "type": "tool_result",
                "name": name,
                "arguments": dict(arguments),
                "ok": ok,
                "text": text,
            }
        )
        return ok, text


async def _write(ws: ServerConnection, outbox: asyncio.Queue[str]) -> None:
    try:
        while True:
            await ws.send(await outbox.get())
    except Exception:  # closed: what was not sent is lost, as with a gateway
        pass


def main(argv: list[str] | None = None) -> None:
    parser = fake_parser("python -m paperclip_gateway_testing.fake_gateway")
    parser.add_argument("--port", type=int, default=18789)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--token-env")
    parser.add_argument("--mcp-url")
    parser.add_argument("--mcp-token-env")
    args = parse_fake(parser, argv, FAKE_VERSION)
    if args is None:
        return
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # for the process lifetime
    asyncio.run(_serve(FakeGateway(args, log), args.host, args.port))


async def _serve(gateway: FakeGateway, host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with serve(gateway.connection, host, port, max_size=32 * 1024 * 1024):
        print(f"fake gateway listening on ws://{host}:{port}", flush=True)
        gateway.log({"type": "started", "pid": os.getpid()})
        await stop.wait()


if __name__ == "__main__":
    main()
