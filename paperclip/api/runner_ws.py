"""The runner endpoint: ``/api/runner/v1/connect``, the runner protocol over a WebSocket.

The route authenticates the runner's credential, then hands the engine the
connection as a plain transport (frames in, frames out, close).
"""

from __future__ import annotations

from typing import Any

from litestar import WebSocket, websocket
from litestar.datastructures import State
from litestar.exceptions import WebSocketDisconnect

from paperclip.api.access import Access, access
from paperclip.api.auth import bearer_token
from paperclip.engine.transport import TransportClosed
from paperclip.wire.messages import CLOSE_UNAUTHORIZED, PATH


class WebSocketTransport:
    """A Litestar WebSocket as the engine's ``Transport``."""

    def __init__(self, socket: WebSocket[Any, Any, Any]) -> None:
        self.socket = socket

    async def receive(self) -> str | bytes:
        try:
            return await self.socket.receive_text()
        except WebSocketDisconnect as exc:
            raise TransportClosed(str(exc)) from exc

    async def send(self, frame: str) -> None:
        try:
            await self.socket.send_text(frame)
        except WebSocketDisconnect as exc:
            raise TransportClosed(str(exc)) from exc

    async def close(self, code: int, reason: str) -> None:
        await self.socket.close(code=code, reason=reason)


@websocket(PATH.removeprefix("/api"), opt=access(Access.PUBLIC))
async def runner_connect(socket: WebSocket[Any, Any, Any], state: State) -> None:
    """A runner connects here with ``Authorization: Bearer <runner credential>``."""
    await socket.accept()
    secret = bearer_token(socket)
    runner = await state.runners.authenticate(secret) if secret else None
    if runner is None:
        await socket.close(code=CLOSE_UNAUTHORIZED, reason="runner credential refused")
        return
    await state.run_engine.serve_runner(runner, WebSocketTransport(socket))
