"""A scripted stand-in for ``codex app-server``, for tests.

Run it as::

    python -m paperclip_codex_testing.fake_app_server (--script PATH | --script-dir DIR) [--log PATH]
        [-c key=value ...]

It speaks the app-server's JSON-RPC subset as JSON lines on stdio
(``initialize``, ``thread/start``, ``thread/resume``, ``turn/start``,
``turn/steer``, ``turn/interrupt``) with the shapes codex-cli 0.171.0 sends. It
reads its configuration the way Codex does, from ``$CODEX_HOME/config.toml``
and ``-c`` overrides, so a driver starts it exactly as it starts the real CLI;
``mcp_servers.<name>`` tells it where the run's tools are: it lists them at
thread start (``mcpServer/startupStatus/updated``), gates each call by approval
the way Codex does (:mod:`paperclip_codex_testing.fake_tools`), and calls them with the
official MCP client over streamable HTTP. Shell steps run in the thread's
sandbox mode as far as git goes (:mod:`paperclip_codex_testing.fake_sandbox`).

Scripts and steps: :mod:`paperclip_codex_testing.fake_script`. With ``--log PATH``
every received message, tool result and approval answer is appended there as
a JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
import tomllib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from paperclip_codex.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, decode, encode

from paperclip_codex_testing import __version__
from paperclip_codex_testing.fake_sandbox import Shell, sandbox_mode, sandbox_policy
from paperclip_codex_testing.fake_script import ScriptError, ScriptSource
from paperclip_codex_testing.fake_threads import ThreadStore
from paperclip_codex_testing.fake_tools import McpClient
from paperclip_codex_testing.fake_turn import ThreadState, TurnRun, TurnRunner, turn_shape

FAKE_VERSION = f"paperclip-fake-codex {__version__}"


def load_config(home: Path, overrides: list[str]) -> dict[str, Any]:
    """``$CODEX_HOME/config.toml`` with ``-c key=value`` overrides applied, as Codex reads them."""
    doc: dict[str, Any] = {}
    config_file = home / "config.toml"
    if config_file.exists():
        with config_file.open("rb") as handle:
            doc = tomllib.load(handle)
    for raw in overrides:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"invalid -c override (want key=value): {raw!r}")
        _set_path(doc, key.strip().split("."), _parse_value(value.strip()))
    return doc


def _parse_value(raw: str) -> Any:
    # Codex parses an override's value as TOML, and falls back to the raw text.
    try:
        return tomllib.loads(f"_x_ = {raw}")["_x_"]
    except tomllib.TOMLDecodeError:
        return raw.strip("\"'")


def _set_path(doc: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        child = doc.get(part)
        if not isinstance(child, dict):
            child = doc[part] = {}
        doc = child
    doc[path[-1]] = value


class EventLog:
    """Appends JSON lines to the ``--log`` file, if any."""

    def __init__(self, path: str | None) -> None:
        self._handle: IO[str] | None = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._handle = open(path, "a", encoding="utf-8")  # open for the process lifetime

    def write(self, entry: Mapping[str, Any]) -> None:
        if self._handle is not None:
            self._handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
            self._handle.flush()


@dataclass(slots=True)
class _Handled:
    response: Any
    then: list[Callable[[], None]] = field(default_factory=list)
    """Run after the response is written: notifications that follow it on the wire."""


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class FakeAppServer:
    """The JSON-RPC server: requests in on stdin, responses and notifications out on stdout."""

    def __init__(
        self,
        scripts: ScriptSource,
        config: dict[str, Any],
        home: Path,
        log: EventLog,
        out: IO[bytes],
    ) -> None:
        self.scripts = scripts
        self.config = config
        self.home = home
        self._log = log
        self._out = out
        self.tools: dict[str, dict[str, dict[str, Any]]] = {}
        self._initialized = False
        self._threads: dict[str, ThreadState] = {}
        self._startup: dict[str, asyncio.Future[None]] = {}
        self._turns: dict[str, TurnRun] = {}
        self._request_ids = itertools.count(0)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._items = itertools.count(1)
        self._mcp: dict[str, McpClient] = {}
        self.shell = Shell(home / "fake-sandbox", log.write)
        self.threads = ThreadStore(home, self._sandbox)

    # What a turn uses (fake_turn.Host)

    def mcp(self, server: str, settings: Mapping[str, Any]) -> McpClient:
        """The client of the MCP server ``server``: one session for the process, as Codex keeps it."""
        client = self._mcp.get(server)
        if client is None:
            client = self._mcp[server] = McpClient(settings)
        return client

    async def close(self) -> None:
        for client in self._mcp.values():
            await client.close()

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        self._send({"method": method, "params": params, "emittedAtMs": int(time.time() * 1000)})

    async def ask(self, method: str, params: Mapping[str, Any], wait_seconds: float) -> Any:
        """Send a server-to-client request and wait for the answer; then ``serverRequest/resolved``."""
        request_id = next(self._request_ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self._send({"method": method, "id": request_id, "params": params})
        try:
            return await asyncio.wait_for(future, wait_seconds)
        finally:
            self._waiting.pop(request_id, None)
            resolved = {"threadId": params.get("threadId"), "requestId": request_id}
            self.notify("serverRequest/resolved", resolved)

    def log(self, entry: Mapping[str, Any]) -> None:
        self._log.write(entry)

    def save(self, thread: ThreadState) -> None:
        self.threads.save(thread)

    def item_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._items):06d}"

    # Wire

    def _send(self, message: Mapping[str, Any]) -> None:
        self._out.write(encode(dict(message)))
        self._out.flush()

    async def serve(self, reader: asyncio.StreamReader) -> None:
        """Handle messages until stdin closes."""
        try:
            while line := await reader.readline():
                message = decode(line)
                if message is None:
                    continue
                self._log.write({"type": "received", "message": message})
                self._dispatch(message)
        finally:
            for run in list(self._turns.values()):
                if run.task is not None:
                    run.task.cancel()

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            future = self._waiting.get(message.get("id"))  # type: ignore[arg-type, unused-ignore]
            if future is not None and not future.done():
                if "error" in message:
                    future.set_exception(RuntimeError(str(message["error"])))
                else:
                    future.set_result(message.get("result"))
            return
        if "id" not in message:
            return  # `initialized` and any other notification: logged, nothing to do
        try:
            result = self._handle(method, message.get("params") or {})
        except _RpcError as exc:
            self._send({"id": message["id"], "error": {"code": exc.code, "message": exc.message}})
            return
        self._send({"id": message["id"], "result": result.response})
        for after in result.then:
            after()

    # Requests

    def _handle(self, method: str, params: dict[str, Any]) -> _Handled:
        if method == "initialize":
            if self._initialized:
                raise _RpcError(INVALID_REQUEST, "Already initialized")
            self._initialized = True
            return _Handled(
                {
                    "userAgent": f"{FAKE_VERSION} (fake)",
                    "codexHome": str(self.home),
                    "platformFamily": "unix",
                    "platformOs": sys.platform,
                }
            )
        if not self._initialized:
            raise _RpcError(INVALID_REQUEST, "Not initialized")
        handler = {
            "thread/start": self._thread_start,
            "thread/resume": self._thread_resume,
            "turn/start": self._turn_start,
            "turn/steer": self._turn_steer,
            "turn/interrupt": self._turn_interrupt,
        }.get(method)
        if handler is None:
            raise _RpcError(METHOD_NOT_FOUND, f"method not supported by the fake: {method}")
        return handler(params)

    def _thread_start(self, params: dict[str, Any]) -> _Handled:
        thread = ThreadState(
            id=str(uuid.uuid4()),
            cwd=params.get("cwd"),
            model=params.get("model") or self.config.get("model"),
            approval_policy=self._policy(params),
            sandbox=self._sandbox(params),
        )
        self._load_script(thread)
        self._threads[thread.id] = thread
        self.threads.save(thread)
        response = self._thread_response(thread)
        started = {"thread": response["thread"]}
        return _Handled(
            response,
            [lambda: self.notify("thread/started", started), lambda: self._start_servers(thread)],
        )

    def _thread_resume(self, params: dict[str, Any]) -> _Handled:
        thread_id = params.get("threadId")
        thread = self._threads.get(thread_id) if isinstance(thread_id, str) else None
        thread = thread or (self.threads.load(thread_id) if isinstance(thread_id, str) else None)
        if thread is None:
            raise _RpcError(INVALID_REQUEST, f"no rollout found for thread id {thread_id}")
        thread.cwd = params.get("cwd") or thread.cwd
        thread.model = params.get("model") or thread.model
        thread.approval_policy = self._policy(params, thread.approval_policy)
        thread.sandbox = self._sandbox(params, thread.sandbox)
        self._load_script(thread)
        self._threads[thread.id] = thread
        # Codex sends the thread's latest usage again, as it was (that earlier turn's).
        replay = thread.usage.notification(thread.id)
        then = [lambda: self._start_servers(thread)]
        if replay is not None:
            then.append(lambda: self.notify("thread/tokenUsage/updated", replay))
        return _Handled(self._thread_response(thread), then)

    def _policy(self, params: Mapping[str, Any], current: str | None = None) -> str:
        policy = params.get("approvalPolicy") or current or self.config.get("approval_policy")
        return str(policy or "on-request")

    def _sandbox(self, params: Mapping[str, Any], current: str | None = None) -> str:
        return sandbox_mode(params.get("sandbox"), current, self.config.get("sandbox_mode"))

    def _load_script(self, thread: ThreadState) -> None:
        try:
            thread.script = self.scripts.for_model(thread.model)
        except (OSError, ValueError) as exc:
            raise _RpcError(INVALID_REQUEST, f"fake app-server: {exc}") from None

    def _start_servers(self, thread: ThreadState) -> None:
        """List each MCP server's tools, with the startup notifications Codex sends."""

        async def start() -> None:
            servers = self.config.get("mcp_servers") or {}
            for name, settings in servers.items():
                status = {"threadId": thread.id, "name": name, "environmentId": None}
                self.notify(
                    "mcpServer/startupStatus/updated",
                    {**status, "status": "starting", "error": None, "failureReason": None},
                )
                ok, listed = await self.mcp(
                    name, settings if isinstance(settings, dict) else {}
                ).list_tools()
                if ok:
                    assert isinstance(listed, dict)
                    self.tools[name] = listed
                    self.notify(
                        "mcpServer/startupStatus/updated",
                        {**status, "status": "ready", "error": None, "failureReason": None},
                    )
                else:
                    self.notify(
                        "mcpServer/startupStatus/updated",
                        {**status, "status": "failed", "error": str(listed), "failureReason": None},
                    )

        self._startup[thread.id] = asyncio.ensure_future(start())

    def _turn_start(self, params: dict[str, Any]) -> _Handled:
        thread = self._threads.get(params.get("threadId", ""))
        if thread is None:
            raise _RpcError(INVALID_REQUEST, f"thread not found: {params.get('threadId')}")
        if thread.id in self._turns:
            raise _RpcError(INVALID_REQUEST, "a turn is already running on this thread")
        assert thread.script is not None
        run = TurnRun(
            id=str(uuid.uuid4()), thread=thread, steps=thread.script.steps_for(thread.turns)
        )
        self._turns[thread.id] = run
        # Counted when it starts, as a rollout records it: a turn cut short by a
        # crash still moves the thread on to the script's next list.
        thread.turns += 1
        self.threads.save(thread)
        runner = TurnRunner(self, run, thread.script.consume_steer)
        startup = self._startup.get(thread.id)

        async def execute() -> None:
            if startup is not None:
                await startup  # the tools are listed before the model first runs
            await runner.execute(
                params.get("input") or [], lambda: self._turns.pop(thread.id, None)
            )

        def begin() -> None:
            run.task = asyncio.ensure_future(execute())

        return _Handled({"turn": turn_shape(run.id, "inProgress")}, [begin])

    def _turn_steer(self, params: dict[str, Any]) -> _Handled:
        run = self._turns.get(params.get("threadId", ""))
        if run is None:
            raise _RpcError(INVALID_REQUEST, "no active turn to steer")
        if params.get("expectedTurnId") != run.id:
            raise _RpcError(
                INVALID_REQUEST, f"expected turn {params.get('expectedTurnId')}, active is {run.id}"
            )
        run.steers.append(list(params.get("input") or []))
        return _Handled({"turnId": run.id})

    def _turn_interrupt(self, params: dict[str, Any]) -> _Handled:
        run = self._turns.get(params.get("threadId", ""))
        if run is None or params.get("turnId") != run.id:
            raise _RpcError(INVALID_REQUEST, "no such active turn")
        run.interrupt.set()
        return _Handled({})

    def _thread_response(self, thread: ThreadState) -> dict[str, Any]:
        provider = str(self.config.get("model_provider", "openai"))
        return {
            "thread": {
                "id": thread.id,
                "sessionId": thread.id,
                "preview": "",
                "ephemeral": False,
                "modelProvider": provider,
                "model": thread.model,
                "createdAt": thread.created_at,
                "updatedAt": int(time.time()),
                "status": {"type": "idle"},
                "path": str(self.threads.path(thread.id)),
                "cwd": thread.cwd,
                "cliVersion": "fake",
                "source": "appServer",
                "turns": [],
            },
            "model": thread.model or "fake-model",
            "modelProvider": provider,
            "cwd": thread.cwd,
            "approvalPolicy": thread.approval_policy,
            "sandbox": sandbox_policy(thread.sandbox),
        }


# Entry point


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m paperclip_codex_testing.fake_app_server")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--script", type=Path, help="the JSON script every thread follows")
    source.add_argument(
        "--script-dir", type=Path, help="a folder of <model>.json scripts, one per model name"
    )
    source.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--log", help="append every received message and tool result here")
    parser.add_argument(
        "-c", "--config", dest="overrides", action="append", default=[], metavar="key=value"
    )
    args = parser.parse_args(argv)
    if args.version:
        print(FAKE_VERSION)
        return
    scripts = ScriptSource(file=args.script, folder=args.script_dir)
    if args.script is not None:
        try:
            scripts.for_model(None)  # a bad script fails at startup, where it is seen
        except (OSError, ScriptError, ValueError) as exc:
            parser.exit(2, f"fake app-server: bad script {args.script}: {exc}\n")
    home = Path(os.environ.get("CODEX_HOME") or tempfile.mkdtemp(prefix="fake-codex-home-"))
    config = load_config(home, args.overrides)
    # stdout is the protocol channel: keep a private handle on it and send
    # anything else that writes to fd 1 (libraries, print) to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    log = EventLog(args.log)
    servers = config.get("mcp_servers") or {}
    log.write(
        {
            "type": "started",
            "pid": os.getpid(),
            "codex_home": str(home),
            "mcp_servers": {
                name: {
                    "url": s.get("url"),
                    "bearer_token_env_var": s.get("bearer_token_env_var"),
                    "bearer_token_set": bool(os.environ.get(str(s.get("bearer_token_env_var")))),
                    "default_tools_approval_mode": s.get("default_tools_approval_mode"),
                }
                for name, s in servers.items()
                if isinstance(s, dict)
            },
            "config": {k: v for k, v in config.items() if k != "mcp_servers"},
            "env": sorted(k for k in os.environ if k.startswith("PAPERCLIP_")),
        }
    )
    server = FakeAppServer(scripts, config, home, log, out)
    asyncio.run(_serve(server))


async def _serve(server: FakeAppServer) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        await server.serve(reader)
    finally:
        await server.close()


if __name__ == "__main__":
    main()
