"""The MCP server the runner hosts for its providers: Paperclip's server-owned tools.

A provider's model reaches the tools over MCP streamable HTTP on loopback. Every
request carries a bearer token that the runner issued for exactly one run; the
run id is taken from the token, never from the client. ``tools/list`` answers
from the catalog; ``tools/call`` is validated here and then handed to
``dispatch``, which forwards it to the control plane and returns its answer.

The HTTP server is uvicorn running inside the caller's event loop, in front of
the MCP SDK's streamable-HTTP session manager in stateless mode: each POST stands
alone, so there is no per-client session state to expire, leak or bind to a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import mcp.types as types
import uvicorn
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from paperclip import __version__
from paperclip.wire.tools import ToolSpec

logger = logging.getLogger("paperclip.runner.mcp")

MCP_PATH = "/mcp"
DEFAULT_MAX_CALLS_PER_RUN = 16
# The largest argument in the catalog is a 100 000-character comment; even fully
# \u-escaped that stays well under 1 MiB.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_SHUTDOWN_GRACE_SECONDS = 5

# Key under which the authenticated run id travels in the ASGI scope to the tool handlers.
_RUN_ID_SCOPE_KEY = "paperclip.run_id"
_MAX_PROBLEM_CHARS = 300
_MAX_QUOTED_CHARS = 40


@dataclass(frozen=True, slots=True)
class ToolCallResult:
    """What the control plane answered to one tool call."""

    content: Any
    """JSON-serialisable result returned to the model (normally a dict)."""
    is_error: bool = False


ToolDispatch = Callable[[str, str, str, dict[str, Any]], Awaitable[ToolCallResult]]
"""``dispatch(run_id, call_id, tool_name, arguments)``: forward one validated call and await its answer."""


class McpBridge:
    """Serves the tool catalog over MCP streamable HTTP at ``/mcp`` on a loopback port.

    Bounded on purpose: at most ``max_calls_per_run`` calls of one run are in
    flight at once (more are answered with an error result), request bodies over
    ``max_body_bytes`` are refused with 413 before they are buffered, and uvicorn
    refuses connections beyond ``max_connections`` with 503. There is no timeout
    on a dispatch: the control plane may be restarting and the dispatch owns retries.
    """

    def __init__(
        self,
        tools: Sequence[ToolSpec],
        dispatch: ToolDispatch,
        *,
        host: str = "127.0.0.1",
        max_calls_per_run: int = DEFAULT_MAX_CALLS_PER_RUN,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        shutdown_grace_seconds: int = DEFAULT_SHUTDOWN_GRACE_SECONDS,
    ) -> None:
        """Check the catalog's schemas and prepare the server; nothing listens until `start`."""
        if max_calls_per_run < 1:
            raise ValueError("max_calls_per_run must be at least 1")
        self._dispatch = dispatch
        self._host = host
        self._max_calls_per_run = max_calls_per_run
        self._max_connections = max_connections
        self._shutdown_grace_seconds = shutdown_grace_seconds

        self._specs: dict[str, ToolSpec] = {}
        self._validators: dict[str, Validator] = {}
        for spec in tools:
            if spec.name in self._specs:
                raise ValueError(f"duplicate tool name {spec.name!r}")
            cls = validator_for(spec.input_schema, default=Draft202012Validator)
            # A broken catalog fails here, not on some model's call.
            cls.check_schema(spec.input_schema)
            self._specs[spec.name] = spec
            self._validators[spec.name] = cls(spec.input_schema)
        self._listing = types.ListToolsResult(
            tools=[
                types.Tool(
                    name=s.name,
                    title=s.title or None,
                    description=s.description,
                    input_schema=s.input_schema,
                    # Without annotations Codex treats a tool as a risky write and
                    # refuses it under approval policy "never".
                    annotations=types.ToolAnnotations.model_validate(s.annotations),
                )
                for s in self._specs.values()
            ]
        )

        # run id -> SHA-256 of its token. Only digests are kept, so a memory dump
        # or a stray log of this map gives away no usable token.
        self._token_digests: dict[str, bytes] = {}
        self._in_flight: dict[str, int] = {}

        self._mcp = Server(
            "paperclip",
            version=__version__,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=self._input_schema,
        )
        self._manager = StreamableHTTPSessionManager(
            app=self._mcp,
            stateless=True,
            security_settings=_loopback_security(host),
            max_request_body_size=max_body_bytes,
        )
        self._uvicorn: _EmbeddedUvicorn | None = None
        self._task: asyncio.Task[None] | None = None
        self._url: str | None = None
        self._used = False
        self._stopping = False

    # -- lifecycle ---------------------------------------------------------

    async def start(self) -> None:
        """Bind an ephemeral port on the host and serve until `stop`; returns once listening."""
        if self._used:
            raise RuntimeError("an McpBridge can be started only once")
        self._used = True
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.bind((self._host, 0))
            port = sock.getsockname()[1]
            config = uvicorn.Config(
                self._asgi,
                interface="asgi3",  # a bound method defeats uvicorn's interface detection
                lifespan="off",
                ws="none",
                http="h11",  # h11 caps incomplete header data (h11_max_incomplete_event_size)
                log_config=None,  # the process configures logging; uvicorn must not reset it
                access_log=False,
                proxy_headers=False,
                server_header=False,
                limit_concurrency=self._max_connections,
                timeout_graceful_shutdown=self._shutdown_grace_seconds,
            )
            server = _EmbeddedUvicorn(config)
        except BaseException:
            sock.close()
            raise
        task = asyncio.create_task(self._serve(server, sock), name="paperclip-mcp-bridge")
        listening = asyncio.create_task(server.listening.wait())
        try:
            await asyncio.wait({task, listening}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()  # start() itself was cancelled: do not leave a server behind
            raise
        finally:
            listening.cancel()
        if task.done():
            sock.close()
            error = None if task.cancelled() else task.exception()
            raise RuntimeError("the MCP bridge failed to start") from error
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._url = f"http://{host}:{port}{MCP_PATH}"
        self._uvicorn, self._task = server, task
        task.add_done_callback(self._on_serve_done)
        logger.info("MCP bridge listening on %s", self._url)

    async def _serve(self, server: _EmbeddedUvicorn, sock: socket.socket) -> None:
        # One task owns both the session manager's task group and uvicorn, so
        # the manager is entered and exited by the same task, as anyio requires.
        async with self._manager.run():
            await server.serve(sockets=[sock])

    def _on_serve_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            logger.error("MCP bridge server stopped unexpectedly", exc_info=task.exception())

    @property
    def url(self) -> str:
        """The MCP endpoint, e.g. ``http://127.0.0.1:PORT/mcp``; available once started."""
        if self._url is None:
            raise RuntimeError("the MCP bridge has not been started")
        return self._url

    async def stop(self) -> None:
        """Stop serving: in-flight calls get ``shutdown_grace_seconds`` to finish. Idempotent."""
        task, server = self._task, self._uvicorn
        if task is None or server is None:
            return
        self._stopping = True
        server.should_exit = True
        # asyncio.wait, not await: a failed or cancelled serve task must not make stop() raise.
        await asyncio.wait({task})
        self._task = None
        logger.info("MCP bridge stopped")

    # -- runs and tokens ---------------------------------------------------

    def open_run(self, run_id: str, token: str) -> None:
        """Make ``token`` act as ``run_id`` from now on, replacing any earlier token of that run."""
        if not run_id:
            raise ValueError("run_id must not be empty")
        if not token or any(c.isspace() for c in token):
            raise ValueError("token must be a non-empty string without whitespace")
        digest = _digest(token)
        owner = self._run_of_digest(digest)
        if owner is not None and owner != run_id:
            raise ValueError("this token is already bound to another run")
        self._token_digests[run_id] = digest
        logger.debug("run %s may call tools", run_id)

    def close_run(self, run_id: str) -> None:
        """Refuse the run's token from now on; calls already in flight still get their answers."""
        if self._token_digests.pop(run_id, None) is not None:
            logger.debug("run %s may no longer call tools", run_id)

    def _run_of_digest(self, digest: bytes) -> str | None:
        # Compare against every entry without stopping early, in constant time
        # each, so response timing says nothing about which tokens exist.
        found: str | None = None
        for run_id, known in self._token_digests.items():
            if hmac.compare_digest(known, digest):
                found = run_id
        return found

    def _authenticate(self, scope: Scope) -> str | None:
        values = [v for k, v in scope["headers"] if k == b"authorization"]
        if len(values) != 1:
            return None
        scheme, _, token = values[0].decode("latin-1").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        return self._run_of_digest(_digest(token))

    # -- HTTP --------------------------------------------------------------

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan is off and WebSockets are disabled: nothing else can arrive
        run_id = self._authenticate(scope)
        if run_id is None:
            logger.info("refused an MCP request without a valid bearer token")
            response = JSONResponse(
                {"error": "unauthorized"}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
        elif scope["path"] != MCP_PATH:
            response = JSONResponse({"error": "not found"}, status_code=404)
        elif scope["method"] != "POST":
            # Stateless: no session to delete and no server-initiated messages to
            # stream, so GET and DELETE are not offered (the spec allows 405).
            response = JSONResponse(
                {"error": "method not allowed"}, status_code=405, headers={"Allow": "POST"}
            )
        else:
            await self._serve_mcp({**scope, _RUN_ID_SCOPE_KEY: run_id}, receive, send)
            return
        await response(scope, receive, send)

    async def _serve_mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = finished = False

        async def tracked_send(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            await send(message)

        try:
            await self._manager.handle_request(scope, receive, tracked_send)
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            # uvicorn cancels requests still open when the shutdown grace runs out.
            # That is the expected end of them: close the response properly so the
            # client sees the stream end (and can retry elsewhere) instead of a reset.
            with contextlib.suppress(Exception):
                if not started:
                    await JSONResponse({"error": "shutting down"}, status_code=503)(
                        scope, receive, send
                    )
                elif not finished:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})

    # -- MCP handlers ------------------------------------------------------

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        spec = self._specs.get(name)
        return spec.input_schema if spec is not None else None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return self._listing

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        run_id = _run_id_of(ctx)
        if run_id is None:  # only reachable if a request bypassed _asgi
            logger.error("tool call without an authenticated run")
            return _error_result("This request is not authenticated.")
        name = params.name
        validator = self._validators.get(name)
        if validator is None:
            logger.info("run %s called unknown tool %r", run_id, name)
            return _error_result(
                f"Unknown tool {name!r}. Available tools: {', '.join(self._specs)}."
            )
        arguments = params.arguments or {}
        error = best_match(validator.iter_errors(arguments))
        if error is not None:
            problem = _describe(error)
            logger.info("run %s called %s with invalid arguments: %s", run_id, name, problem)
            return _error_result(f"Invalid arguments for {name}: {problem}")

        in_flight = self._in_flight.get(run_id, 0)
        if in_flight >= self._max_calls_per_run:
            logger.warning(
                "run %s has %d tool calls in flight; refused %s", run_id, in_flight, name
            )
            return _error_result(
                f"Too many tool calls in progress ({in_flight}); wait for one to finish and try again."
            )
        self._in_flight[run_id] = in_flight + 1
        call_id = str(uuid.uuid4())
        logger.debug("run %s tool call %s: %s", run_id, call_id, name)
        try:
            result = await self._dispatch(run_id, call_id, name, arguments)
            return _to_mcp(result)
        except asyncio.CancelledError:
            # The client went away or the bridge is stopping; the control plane may still act on it.
            logger.warning(
                "run %s tool call %s (%s) cut off before its answer", run_id, call_id, name
            )
            raise
        except Exception:
            logger.exception("run %s tool call %s (%s) failed", run_id, call_id, name)
            return _error_result(f"The tool call failed inside Paperclip (call id {call_id}).")
        finally:
            remaining = self._in_flight[run_id] - 1
            if remaining:
                self._in_flight[run_id] = remaining
            else:
                del self._in_flight[run_id]


class _EmbeddedUvicorn(uvicorn.Server):
    """uvicorn that leaves signals to the hosting process and tells when it is listening."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # The runner owns SIGINT/SIGTERM; uvicorn must not install its own handlers.
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.listening.set()


def _loopback_security(host: str) -> TransportSecuritySettings:
    # DNS-rebinding protection: a browser page must not reach the bridge under a
    # name it controls, even though it would still need a token.
    bracketed = f"[{host}]" if ":" in host else host
    hosts = {bracketed, "127.0.0.1", "localhost", "[::1]"}
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in sorted(hosts)],
        allowed_origins=[f"http://{h}:*" for h in sorted(hosts)],
    )


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def _run_id_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request = ctx.request
    scope = getattr(request, "scope", None)
    run_id = scope.get(_RUN_ID_SCOPE_KEY) if isinstance(scope, dict) else None
    return run_id if isinstance(run_id, str) else None


def _to_mcp(result: ToolCallResult) -> types.CallToolResult:
    content = result.content
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        # Handshake-era clients accept only an object as structured content.
        structured_content=content if isinstance(content, dict) else None,
        is_error=result.is_error,
    )


def _error_result(message: str) -> types.CallToolResult:
    # Reported inside the result, not as a protocol error, so the model sees it and can correct itself.
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def _describe(error: ValidationError) -> str:
    # jsonschema messages quote the offending value, which may be a 100 000-character
    # string: abbreviate the value so the problem itself stays in the message.
    message = error.message
    quoted = repr(error.instance)
    if len(quoted) > _MAX_QUOTED_CHARS:
        message = message.replace(quoted, quoted[: _MAX_QUOTED_CHARS - 1] + "…")
    text = f"{message} (at {error.json_path})"
    return text if len(text) <= _MAX_PROBLEM_CHARS else text[: _MAX_PROBLEM_CHARS - 1] + "…"
