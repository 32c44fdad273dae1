"""The engine's view of a runner connection: frames in, frames out, close.

The HTTP layer accepts the WebSocket, authenticates the runner and hands the
engine an object with these three methods, so the engine has no web framework
in it and tests can drive it in memory.
"""

from __future__ import annotations

from typing import Protocol


class TransportClosed(Exception):
    """The connection is gone (closed by the peer, by this side, or broken)."""


class Transport(Protocol):
    async def receive(self) -> str | bytes:
        """The next frame; raises TransportClosed when the connection is gone."""
        ...

    async def send(self, frame: str) -> None:
        """Send one frame; raises TransportClosed when the connection is gone."""
        ...

    async def close(self, code: int, reason: str) -> None:
        """Close the connection; a no-op when it is closed already."""
        ...
