"""The runner endpoint: ``/api/runner/v1/connect``, the runner protocol over a WebSocket."""

from __future__ import annotations

from typing import Any

from litestar import WebSocket, websocket
from litestar.datastructures import State

from paperclip.api.access import Access, access
from paperclip.runner import protocol


@websocket(protocol.PATH.removeprefix("/api"), opt=access(Access.PUBLIC))
async def runner_connect(socket: WebSocket[Any, Any, Any], state: State) -> None:
    """A runner connects here with ``Authorization: Bearer <runner credential>``."""
    await state.run_engine.serve_runner(socket)
