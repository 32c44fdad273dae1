"""A scripted stand-in for ``codex app-server``, for tests.

Run it as::

    python -m paperclip_codex.fake_app_server --script PATH [--log PATH] [-c key=value ...]

It speaks the app-server's JSON-RPC subset as JSON lines on stdio
(``initialize``, ``thread/start``, ``thread/resume``, ``turn/start``,
``turn/steer``, ``turn/interrupt``) and emits the real notification shapes. It
reads its configuration the way Codex does, from ``$CODEX_HOME/config.toml``
and ``-c`` overrides, so a driver starts it exactly as it starts the real CLI;
``mcp_servers.<name>.url`` and ``bearer_token_env_var`` tell it where the run's
tools are, and it calls them with the official MCP client over streamable HTTP.

The script is JSON: a list of steps run on every turn, or an object::

    {"turns": [[step, ...], [step, ...]], "consume_steer": true}

The thread's n-th turn runs ``turns[n]`` (the last list repeats); ``"steps"``
may stand for a single list. Steps (one key each):

- ``{"message": "text"}``: an ``agentMessage`` item, streamed as deltas.
- ``{"call_tool": {"name": ..., "arguments": {...}, "server": ...}}``: an
  ``mcpToolCall`` item carrying the tool's result (or error).
- ``{"sleep": seconds}``; ``{"touch_file": path}`` (writes the pid into it);
  ``{"wait_for_file": path, "timeout": seconds}`` (default 60 s, then the turn fails).
- ``{"fail": "reason"}``: the turn ends ``failed`` with that message.
- ``{"request_approval": "commandExecution" | "fileChange"}``: asks the client.
- ``{"notify": {"method": ..., "params": {...}}}``: any notification.
- ``{"exit": status}``: the process exits at once, mid-turn.

A steer is acknowledged at once; with ``"consume_steer": true`` it enters the
turn as a ``userMessage`` item at the next step boundary, as Codex does. With
``--log PATH`` every received message, tool result and approval answer is
appended there as a JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import sys
import tempfile
import time
import tomllib
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

STEP_KINDS = frozenset(
    {
        "message",
        "call_tool",
        "sleep",
        "wait_for_file",
        "touch_file",
        "fail",
        "request_approval",
        "notify",
        "exit",
    }
)
STEP_OPTIONS = {"wait_for_file": {"timeout"}}
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
_THREAD_ID = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


class ScriptError(ValueError):
    """The script file is not a valid fake script."""


@dataclass(frozen=True, slots=True)
class Script:
    """What the fake does on each turn."""

    turns: list[list[dict[str, Any]]]
    consume_steer: bool = False

    def steps_for(self, turn_index: int) -> list[dict[str, Any]]:
        """The steps of a thread's ``turn_index``-th turn (the last list repeats)."""
        if not self.turns:
            return []
        return self.turns[min(turn_index, len(self.turns) - 1)]


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and validate a script file."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    consume_steer = False
    if isinstance(data, list):
        turns = [data]
    elif isinstance(data, dict):
        consume_steer = bool(data.get("consume_steer", False))
        if "turns" in data:
            turns = data["turns"]
        elif "steps" in data:
            turns = [data["steps"]]
        else:
            raise ScriptError("a script object needs 'turns' or 'steps'")
    else:
        raise ScriptError("a script is a list of steps or an object")
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        raise ScriptError("'turns' must be a list of step lists")
    for steps in turns:
        for step in steps:
            _check_step(step)
    return Script(turns=turns, consume_steer=consume_steer)


def _check_step(step: Any) -> None:
    if not isinstance(step, dict):
        raise ScriptError(f"a step must be an object: {step!r}")
    kinds = STEP_KINDS & step.keys()
    if len(kinds) != 1:
        raise ScriptError(f"a step needs exactly one of {sorted(STEP_KINDS)}: {step!r}")
    (kind,) = kinds
    extra = step.keys() - {kind} - STEP_OPTIONS.get(kind, set())
    if extra:
        raise ScriptError(f"unknown key(s) {sorted(extra)} in step {step!r}")
    if kind == "call_tool" and not (
        isinstance(step[kind], dict) and isinstance(step[kind].get("name"), str)
    ):
        raise ScriptError(f"call_tool needs an object with a 'name': {step!r}")


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
class ThreadState:
    id: str
    cwd: str | None
    turns: int = 0
    created_at: int = field(default_factory=lambda: int(time.time()))


@dataclass(slots=True)
class TurnRun:
    id: str
    thread: ThreadState
    steps: list[dict[str, Any]]
    interrupt: asyncio.Event = field(default_factory=asyncio.Event)
    steers: list[list[dict[str, Any]]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None


class _Failure(Exception):
    """A step ended the turn as failed."""


class _Interrupted(Exception):
    """The client interrupted the turn."""


class FakeAppServer:
    """The JSON-RPC server: requests in on stdin, responses and notifications out on stdout."""

    def __init__(
        self, script: Script, config: dict[str, Any], home: Path, log: EventLog, out: IO[bytes]
    ) -> None:
        self.script = script
        self.config = config
        self.home = home
        self.log = log
        self._out = out
        self._initialized = False
        self._threads: dict[str, ThreadState] = {}
        self._turns: dict[str, TurnRun] = {}
        self._next_request = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._items = 0

    # Wire

    def send(self, message: Mapping[str, Any]) -> None:
        self._out.write((json.dumps(message, ensure_ascii=False) + "\n").encode())
        self._out.flush()

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        self.send({"method": method, "params": params})

    async def ask(self, method: str, params: Mapping[str, Any], wait_seconds: float) -> Any:
        """Send a server-to-client request and wait for the answer."""
        self._next_request += 1
        request_id = self._next_request
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self.send({"method": method, "id": request_id, "params": params})
        try:
            return await asyncio.wait_for(future, wait_seconds)
        finally:
            self._waiting.pop(request_id, None)

    async def serve(self, reader: asyncio.StreamReader) -> None:
        """Handle messages until stdin closes."""
        try:
            while line := await reader.readline():
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    print(f"fake app-server: not JSON: {line[:200]!r}", file=sys.stderr)
                    continue
                self.log.write({"type": "received", "message": message})
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
        params = message.get("params") or {}
        try:
            result = self._handle(method, params)
        except _RpcError as exc:
            self.send({"id": message["id"], "error": {"code": exc.code, "message": exc.message}})
            return
        self.send({"id": message["id"], "result": result.response})
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
                    "userAgent": "paperclip-fake-codex/0.1.0",
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
        thread = ThreadState(id=str(uuid.uuid4()), cwd=params.get("cwd"))
        self._threads[thread.id] = thread
        self._save(thread)
        response = self._thread_response(thread, params)
        started = {"thread": response["thread"]}
        return _Handled(response, [lambda: self.notify("thread/started", started)])

    def _thread_resume(self, params: dict[str, Any]) -> _Handled:
        thread_id = params.get("threadId")
        thread = self._load(thread_id) if isinstance(thread_id, str) else None
        if thread is None:
            raise _RpcError(INVALID_REQUEST, f"no rollout found for thread id {thread_id}")
        if params.get("cwd"):
            thread.cwd = params["cwd"]
        self._threads[thread.id] = thread
        return _Handled(self._thread_response(thread, params))

    def _turn_start(self, params: dict[str, Any]) -> _Handled:
        thread = self._threads.get(params.get("threadId", ""))
        if thread is None:
            raise _RpcError(INVALID_REQUEST, f"thread not found: {params.get('threadId')}")
        if thread.id in self._turns:
            raise _RpcError(INVALID_REQUEST, "a turn is already running on this thread")
        run = TurnRun(
            id=str(uuid.uuid4()), thread=thread, steps=self.script.steps_for(thread.turns)
        )
        self._turns[thread.id] = run
        # Counted when it starts, as a rollout records it: a turn cut short by a
        # crash still moves the thread on to the script's next list.
        thread.turns += 1
        self._save(thread)
        user_input = params.get("input") or []

        def begin() -> None:
            run.task = asyncio.ensure_future(self._run_turn(run, user_input))

        return _Handled({"turn": _turn(run.id, "inProgress")}, [begin])

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

    def _thread_response(self, thread: ThreadState, params: dict[str, Any]) -> dict[str, Any]:
        provider = str(self.config.get("model_provider", "openai"))
        return {
            "thread": {
                "id": thread.id,
                "preview": "",
                "ephemeral": False,
                "modelProvider": provider,
                "createdAt": thread.created_at,
                "updatedAt": int(time.time()),
                "status": {"type": "idle"},
                "path": str(self._thread_file(thread.id)),
                "cwd": thread.cwd,
                "cliVersion": "fake",
                "source": "appServer",
                "turns": [],
            },
            "model": params.get("model") or self.config.get("model", "fake-model"),
            "modelProvider": provider,
            "cwd": thread.cwd,
            "approvalPolicy": params.get("approvalPolicy") or self.config.get("approval_policy"),
            "sandbox": params.get("sandbox") or self.config.get("sandbox_mode"),
        }

    # Threads on disk, so a later process can resume them (as Codex rollouts do).

    def _thread_file(self, thread_id: str) -> Path:
        return self.home / "fake-threads" / f"{thread_id}.json"

    def _save(self, thread: ThreadState) -> None:
        path = self._thread_file(thread.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {
            "id": thread.id,
            "cwd": thread.cwd,
            "turns": thread.turns,
            "createdAt": thread.created_at,
        }
        path.write_text(json.dumps(state), encoding="utf-8")

    def _load(self, thread_id: str) -> ThreadState | None:
        if thread_id in self._threads:
            return self._threads[thread_id]
        if not _THREAD_ID.match(thread_id):
            return None
        path = self._thread_file(thread_id)
        if not path.exists():
            return None
        state = json.loads(path.read_text(encoding="utf-8"))
        return ThreadState(
            id=state["id"],
            cwd=state.get("cwd"),
            turns=state["turns"],
            created_at=state["createdAt"],
        )

    # The turn

    async def _run_turn(self, run: TurnRun, user_input: list[Any]) -> None:
        ids = {"threadId": run.thread.id, "turnId": run.id}
        self.notify(
            "turn/started", {"threadId": run.thread.id, "turn": _turn(run.id, "inProgress")}
        )
        self._user_message(run, user_input)
        status, error = "completed", None
        try:
            for step in run.steps:
                if run.interrupt.is_set():
                    raise _Interrupted
                self._consume_steers(run)
                await self._interruptible(run, self._step(run, step))
            self._consume_steers(run)
        except _Interrupted:
            status = "interrupted"
        except _Failure as exc:
            status, error = "failed", {"message": str(exc), "codexErrorInfo": "other"}
            self.notify("error", {"error": error, "willRetry": False, **ids})
        except Exception as exc:  # a fake bug still ends the turn, or the client would wait forever
            status, error = "failed", {"message": f"fake app-server error: {exc!r}"}
        self._turns.pop(run.thread.id, None)
        self.notify(
            "turn/completed", {"threadId": run.thread.id, "turn": _turn(run.id, status, error)}
        )

    async def _interruptible(self, run: TurnRun, work: Any) -> None:
        step = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(run.interrupt.wait())
        try:
            await asyncio.wait({step, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not step.done():
            step.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await step
            raise _Interrupted
        step.result()

    def _consume_steers(self, run: TurnRun) -> None:
        if not self.script.consume_steer:
            return
        while run.steers:
            self._user_message(run, run.steers.pop(0))

    def _user_message(self, run: TurnRun, content: list[Any]) -> None:
        item = {"type": "userMessage", "id": self._item_id(), "clientId": None, "content": content}
        self._item_started(run, item)
        self._item_completed(run, item)

    async def _step(self, run: TurnRun, step: dict[str, Any]) -> None:
        if "message" in step:
            self._message(run, str(step["message"]))
        elif "call_tool" in step:
            await self._call_tool(run, step["call_tool"])
        elif "sleep" in step:
            await asyncio.sleep(float(step["sleep"]))
        elif "wait_for_file" in step:
            await self._wait_for_file(Path(step["wait_for_file"]), float(step.get("timeout", 60)))
        elif "touch_file" in step:
            _write_atomically(Path(step["touch_file"]), str(os.getpid()))
        elif "fail" in step:
            raise _Failure(str(step["fail"]))
        elif "request_approval" in step:
            await self._request_approval(run, str(step["request_approval"]))
        elif "notify" in step:
            self.notify(str(step["notify"]["method"]), step["notify"].get("params") or {})
        elif "exit" in step:
            self._out.flush()
            os._exit(int(step["exit"]))

    def _message(self, run: TurnRun, text: str) -> None:
        item = {"type": "agentMessage", "id": self._item_id(), "text": "", "phase": None}
        self._item_started(run, item)
        for chunk in re.findall(r"\S+\s*|\s+", text):
            self.notify(
                "item/agentMessage/delta",
                {"threadId": run.thread.id, "turnId": run.id, "itemId": item["id"], "delta": chunk},
            )
        self._item_completed(run, {**item, "text": text})

    async def _call_tool(self, run: TurnRun, call: dict[str, Any]) -> None:
        servers = self.config.get("mcp_servers") or {}
        server = call.get("server") or (next(iter(servers)) if len(servers) == 1 else "paperclip")
        name, arguments = call["name"], call.get("arguments") or {}
        item: dict[str, Any] = {
            "type": "mcpToolCall",
            "id": self._item_id(),
            "server": server,
            "tool": name,
            "status": "inProgress",
            "arguments": arguments,
            "result": None,
            "error": None,
            "durationMs": None,
        }
        self._item_started(run, item)
        started = time.monotonic()
        settings = servers.get(server)
        outcome: dict[str, Any] | str
        if not isinstance(settings, dict):
            ok, outcome = False, f"unknown MCP server {server!r}"
        else:
            ok, outcome = await call_mcp_tool(settings, name, arguments)
        duration = int((time.monotonic() - started) * 1000)
        record = {
            "type": "tool_result",
            "server": server,
            "name": name,
            "arguments": arguments,
            "ok": ok,
        }
        if ok:
            assert isinstance(outcome, dict)
            failed = bool(outcome.get("isError"))
            result = {
                "content": outcome.get("content", []),
                "structuredContent": outcome.get("structuredContent"),
            }
            item |= {"status": "failed" if failed else "completed", "result": result}
            record["result"] = result
        else:
            item |= {"status": "failed", "error": {"message": str(outcome)}}
            record["error"] = str(outcome)
        self.log.write(record)
        self._item_completed(run, item | {"durationMs": duration})

    async def _wait_for_file(self, path: Path, limit: float) -> None:
        deadline = time.monotonic() + limit
        while not _exists(path):
            if time.monotonic() > deadline:
                raise _Failure(f"wait_for_file {path} timed out after {limit:g}s")
            await asyncio.sleep(0.01)

    async def _request_approval(self, run: TurnRun, kind: str) -> None:
        ids = {"threadId": run.thread.id, "turnId": run.id}
        if kind == "fileChange":
            item: dict[str, Any] = {
                "type": "fileChange",
                "id": self._item_id(),
                "changes": [],
                "status": "inProgress",
            }
            method, params = (
                "item/fileChange/requestApproval",
                {**ids, "itemId": item["id"], "reason": "fake"},
            )
        else:
            item = {
                "type": "commandExecution",
                "id": self._item_id(),
                "command": "echo fake",
                "cwd": run.thread.cwd,
                "processId": None,
                "source": "agent",
                "status": "inProgress",
                "commandActions": [],
                "aggregatedOutput": None,
                "exitCode": None,
                "durationMs": None,
            }
            method = "item/commandExecution/requestApproval"
            params = {
                **ids,
                "itemId": item["id"],
                "command": "echo fake",
                "cwd": run.thread.cwd,
                "reason": "fake",
            }
        self._item_started(run, item)
        try:
            answer = await self.ask(method, params, 30)
            decision = answer.get("decision") if isinstance(answer, dict) else None
        except (TimeoutError, RuntimeError) as exc:
            decision = f"no answer: {exc}"
        self.log.write({"type": "approval", "method": method, "decision": decision})
        accepted = decision in ("accept", "acceptForSession")
        self._item_completed(run, item | {"status": "completed" if accepted else "declined"})

    def _item_started(self, run: TurnRun, item: Mapping[str, Any]) -> None:
        self.notify("item/started", {"item": item, "threadId": run.thread.id, "turnId": run.id})

    def _item_completed(self, run: TurnRun, item: Mapping[str, Any]) -> None:
        self.notify("item/completed", {"item": item, "threadId": run.thread.id, "turnId": run.id})

    def _item_id(self) -> str:
        self._items += 1
        return f"item_{self._items}"


@dataclass(slots=True)
class _Handled:
    response: Any
    then: list[Any] = field(default_factory=list)
    """Run after the response is written: notifications that follow it on the wire."""


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _turn(turn_id: str, status: str, error: Any = None) -> dict[str, Any]:
    return {"id": turn_id, "items": [], "status": status, "error": error}


def _exists(path: Path) -> bool:
    return path.exists()  # a stat of a local file: cheap enough for a test fake's poll


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


# MCP


async def call_mcp_tool(
    settings: Mapping[str, Any], name: str, arguments: Mapping[str, Any]
) -> tuple[bool, dict[str, Any] | str]:
    """Call one tool on a configured streamable-HTTP MCP server; (ok, result or error text)."""
    url = settings.get("url")
    if not isinstance(url, str):
        return False, "the MCP server has no url (only streamable HTTP is supported by the fake)"
    headers = {str(k): str(v) for k, v in (settings.get("http_headers") or {}).items()}
    for header, variable in (settings.get("env_http_headers") or {}).items():
        if os.environ.get(variable):
            headers[str(header)] = os.environ[variable]
    token_variable = settings.get("bearer_token_env_var")
    if isinstance(token_variable, str) and os.environ.get(token_variable):
        headers["Authorization"] = f"Bearer {os.environ[token_variable]}"
    try:
        from mcp import ClientSession
    except ImportError:
        return (
            False,
            "the fake app-server needs the mcp package: pip install 'paperclip-codex[fake]'",
        )
    wait = float(settings.get("tool_timeout_sec", 60))
    try:
        async with asyncio.timeout(wait), _mcp_streams(url, headers) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool(name, dict(arguments))
    except TimeoutError:
        return False, f"MCP call to {name} timed out after {wait:g}s"
    except Exception as exc:
        return False, _error_text(exc)
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return True, dumped


@asynccontextmanager
async def _mcp_streams(url: str, headers: dict[str, str]) -> AsyncIterator[tuple[Any, Any]]:
    # mcp 2 (and late 1.x) takes a configured HTTP client; early 1.x takes headers.
    try:
        from mcp.client.streamable_http import streamable_http_client
    except ImportError:
        from mcp.client.streamable_http import (  # type: ignore[attr-defined, unused-ignore]
            streamablehttp_client,
        )

        async with streamablehttp_client(url, headers=headers) as streams:
            yield streams[0], streams[1]
        return
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams[0], streams[1]


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_error_text(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# Entry point


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m paperclip_codex.fake_app_server")
    parser.add_argument("--script", required=True, help="the JSON script to follow")
    parser.add_argument("--log", help="append every received message and tool result here")
    parser.add_argument(
        "-c", "--config", dest="overrides", action="append", default=[], metavar="key=value"
    )
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script)
    except (OSError, ValueError) as exc:
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
                }
                for name, s in servers.items()
                if isinstance(s, dict)
            },
            "config": {k: v for k, v in config.items() if k != "mcp_servers"},
        }
    )
    server = FakeAppServer(script, config, home, log, out)
    asyncio.run(_serve(server))


async def _serve(server: FakeAppServer) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    await server.serve(reader)


if __name__ == "__main__":
    main()
