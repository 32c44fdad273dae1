"""JSON-RPC 2.0 as JSON lines over a byte stream, the way ``codex app-server`` speaks it.

The one framing of the package: the driver's connection and the fake app-server both use it.

Codex omits the ``"jsonrpc": "2.0"`` member on the wire, and so do we. Either
side may send requests: the provider asks the client for approvals, so a
connection both issues requests and answers them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

logger = logging.getLogger(__name__)

Message = dict[str, Any]
MessageSink = Callable[[Message], Awaitable[None]]
"""Receives notifications and server requests, in wire order; awaiting it applies back-pressure."""
RequestHandler = Callable[[str, Any], Awaitable[Any]]
"""Answers a server request: returns the result, or raises :class:`JsonRpcError`."""
CloseHandler = Callable[[str], None]
"""Told once, synchronously, why the stream ended."""

INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class JsonRpcError(Exception):
    """An error response, received from the peer or to be sent to it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class ConnectionClosed(Exception):
    """The peer's stream ended (the process exited, or the connection was closed)."""


def encode(message: Message) -> bytes:
    """One JSON line."""
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def decode(line: bytes) -> Message | None:
    """The message on one line, or None for a blank, non-JSON or non-object line (logged)."""
    line = line.strip()
    if not line:
        return None
    try:
        message = json.loads(line)
    except ValueError:
        logger.warning("ignoring a non-JSON line from the peer: %.200r", line)
        return None
    if not isinstance(message, dict):
        logger.warning("ignoring a non-object JSON line from the peer: %.200r", line)
        return None
    return message


class JsonRpcConnection:
    """Requests, notifications and responses over one reader/writer pair.

    ``start()`` launches the read loop. Incoming notifications and requests are
    handed to ``on_message`` in order; requests are answered through
    ``on_request`` first, so a slow message sink never leaves the peer waiting
    for an answer.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        on_message: MessageSink,
        on_request: RequestHandler,
        on_close: CloseHandler | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._on_message = on_message
        self._on_request = on_request
        self._on_close = on_close
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._closed_reason: str | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start reading."""
        if self._task is None:
            self._task = asyncio.create_task(self._read_loop(), name="codex-jsonrpc-reader")

    @property
    def closed_reason(self) -> str | None:
        """Why the stream ended, or None while it is open."""
        return self._closed_reason

    async def send_request(self, method: str, params: Any = None) -> asyncio.Future[Any]:
        """Send a request; the returned future resolves with its result or error."""
        self._check_open()
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: Message = {"method": method, "id": request_id}
        if params is not None:
            message["params"] = params
        try:
            await self._write(message)
        except BaseException:
            self._pending.pop(request_id, None)
            raise
        # The entry goes when the future settles, however that happens (timeout included).
        future.add_done_callback(lambda _: self._pending.pop(request_id, None))
        return future

    async def request(self, method: str, params: Any = None, *, wait_seconds: float) -> Any:
        """Send a request and wait for its result, at most ``wait_seconds``."""
        future = await self.send_request(method, params)
        return await asyncio.wait_for(future, wait_seconds)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        self._check_open()
        message: Message = {"method": method}
        if params is not None:
            message["params"] = params
        await self._write(message)

    async def aclose(self) -> None:
        """Stop reading and close the writing side."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._mark_closed("connection closed")
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

    def _check_open(self) -> None:
        if self._closed_reason is not None:
            raise ConnectionClosed(self._closed_reason)

    async def _write(self, message: Message) -> None:
        try:
            self._writer.write(encode(message))
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            raise ConnectionClosed(f"cannot write to the provider: {exc}") from exc

    async def _read_loop(self) -> None:
        reason = "end of stream"
        try:
            while True:
                try:
                    line = await self._reader.readline()
                except ValueError:
                    # StreamReader's limit: a bounded reader, not an unbounded buffer.
                    reason = "a message exceeded the reader's size limit"
                    break
                except ConnectionError as exc:
                    reason = f"read failed: {exc}"
                    break
                if not line:
                    break
                message = decode(line)
                if message is None:
                    continue
                await self._dispatch(message)
        except asyncio.CancelledError:
            reason = "connection closed"
            raise
        finally:
            self._mark_closed(reason)

    async def _dispatch(self, message: Message) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                await self._answer(message["id"], method, message.get("params"))
            await self._on_message(message)
            return
        if "id" in message and ("result" in message or "error" in message):
            self._resolve(message)
            return
        logger.warning("ignoring an unrecognised message from the provider: %.200r", message)

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        response: Message = {"id": request_id}
        try:
            response["result"] = await self._on_request(method, params)
        except JsonRpcError as exc:
            response["error"] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                response["error"]["data"] = exc.data
        except Exception as exc:  # a handler bug must still produce an answer
            logger.exception("answering %s failed", method)
            response["error"] = {"code": INTERNAL_ERROR, "message": f"client error: {exc}"}
        with contextlib.suppress(ConnectionClosed):
            await self._write(response)

    def _resolve(self, message: Message) -> None:
        request_id = message["id"]
        future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            return  # a late answer to a request we stopped waiting for
        error = message.get("error")
        if error is not None:
            if isinstance(error, dict):
                code = error.get("code")
                future.set_exception(
                    JsonRpcError(
                        code if isinstance(code, int) else INTERNAL_ERROR,
                        str(error.get("message", "error")),
                        error.get("data"),
                    )
                )
            else:
                future.set_exception(JsonRpcError(INTERNAL_ERROR, str(error)))
        else:
            future.set_result(message.get("result"))

    def _mark_closed(self, reason: str) -> None:
        if self._closed_reason is not None:
            return
        self._closed_reason = reason
        for future in list(self._pending.values()):
            if not future.done():
                future.set_exception(ConnectionClosed(reason))
        self._pending.clear()
        if self._on_close is not None:
            self._on_close(reason)
