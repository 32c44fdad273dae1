"""The runner endpoint: ``/api/runner/v1/connect``, the runner protocol over a WebSocket.

The route authenticates the runner's credential, then hands the engine the
connection as a plain transport (frames in, frames out, close).
"""

from __future__ import annotations

import logging
from typing import Any

from litestar import WebSocket, websocket
from litestar.datastructures import State
from litestar.exceptions import WebSocketDisconnect

from paperclip.api.auth import bearer_token
from paperclip.db.availability import log_failure
from paperclip.engine.connections.runners import CLOSE_TRY_AGAIN
from paperclip.engine.links.transport import TransportClosed
from paperclip.http.access import Access, access
from paperclip.wire.messages import CLOSE_UNAUTHORIZED, PATH

log = logging.getLogger(__name__)


class WebSocketTransport:
    """A Litestar WebSocket as the engine's ``Transport``."""

    def __init__(self, socket: WebSocket[Any, Any, Any]) -> None:
        self.socket = socket
        self.closed = False

    async def receive(self) -> str | bytes:
        try:
            return await self.socket.receive_text()
        except WebSocketDisconnect as exc:
            raise TransportClosed(str(exc)) from exc

    async def send(self, frame: str) -> None:
        if self.closed:
            raise TransportClosed("this side closed the connection")
        try:
            await self.socket.send_text(frame)
        except WebSocketDisconnect as exc:
            raise TransportClosed(str(exc)) from exc
        except RuntimeError as exc:  # the ASGI server refuses a send after a close
            raise TransportClosed(str(exc)) from exc
        except OSError as exc:  # uvicorn's ClientDisconnected: the runner's side left
            raise TransportClosed(str(exc) or "the runner's side closed") from exc

    async def close(self, code: int, reason: str) -> None:
        # Once, and not after the runner's side closed it: the ASGI server refuses
        # a second ``websocket.close`` (and logs it as an error).
        if self.closed or self.socket.connection_state == "disconnect":
            return
        self.closed = True
        try:
            await self.socket.close(code=code, reason=reason)
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass  # the connection went meanwhile


@websocket(PATH.removeprefix("/api"), opt=access(Access.PUBLIC))
async def runner_connect(socket: WebSocket[Any, Any, Any], state: State) -> None:
    """A runner connects here with ``Authorization: Bearer <runner credential>``.

    No exception leaves this handler: by then the socket may be closed, and the
    framework's error handler would try to close it again.
    """
    await socket.accept()
    transport = WebSocketTransport(socket)
    secret = bearer_token(socket)
    try:
        runner = await state.runners.authenticate(secret) if secret else None
    except Exception as exc:  # the database is away, say: the runner dials again
        log_failure(log, "a runner could not be authenticated", exc)
        await transport.close(CLOSE_TRY_AGAIN, "the control plane cannot serve it now")
        return
    if runner is None:
        await transport.close(CLOSE_UNAUTHORIZED, "runner credential refused")
        return
    try:
        await state.run_engine.serve_runner(runner, transport)
    except Exception as exc:
        log_failure(log, "the connection of runner %s ended in an error", exc, runner.name)
    finally:
        await transport.close(CLOSE_TRY_AGAIN, "the control plane cannot serve it now")
