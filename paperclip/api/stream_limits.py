"""Caps on event streams, per key and per client address.

An event stream (``text/event-stream``: a run's events, a conversation's
messages) holds a connection and reads the database for as long as it lasts.
Nothing capped them: one client opened two thousand and more, and the server's
memory grew by a hundred megabytes it kept after they ended.

So each replica counts the streams open now, by credential (the bearer token's
digest; without one, the anonymous caller, the local operator in the no-login
mode) and by client address, and refuses one more over either cap with ``429
too_many_streams`` (and ``Retry-After``) before anything runs. The count is
taken around the whole request, so a stream ended any way (done, client gone,
error) gives its place back. (The memory a burst of connections took is given
back by the HTTP server's protocol: ``paperclip.cli.http_protocol``.)

Which routes stream is read from the app's own routes (their media type), so
a stream route added later is capped too.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable

from litestar import Litestar
from litestar.types import ASGIApp, Receive, Scope, Send

from paperclip.http.errors import error_json

EVENT_STREAM = "text/event-stream"
RETRY_AFTER_SECONDS = 5


def stream_paths(app: Litestar) -> list[re.Pattern[str]]:
    """A pattern for the path of each route of ``app`` that answers with an event stream."""
    found = []
    for route in app.routes:
        handlers = getattr(route, "route_handlers", [])
        if any(getattr(h, "media_type", None) == EVENT_STREAM for h in handlers):
            parts = re.split(r"\{[^}]+\}", route.path_format)
            found.append(re.compile("^" + "[^/]+".join(map(re.escape, parts)) + "/?$"))
    return found


class StreamLimits:
    """ASGI middleware: counts open event streams; refuses one over a cap (``429``)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        paths: Iterable[re.Pattern[str]],
        per_key: int,
        per_address: int,
    ) -> None:
        self.app = app
        self.paths = tuple(paths)
        self.per_key, self.per_address = per_key, per_address
        self.by_key: Counter[str] = Counter()
        self.by_address: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "GET"
            or not any(p.match(scope["path"]) for p in self.paths)
        ):
            await self.app(scope, receive, send)
            return
        key, address = _key(scope), _address(scope)
        if self.by_key[key] >= self.per_key:
            await _refuse(send, f"this credential has {self.per_key} event streams open already")
            return
        if self.by_address[address] >= self.per_address:
            await _refuse(send, f"this address has {self.per_address} event streams open already")
            return
        self.by_key[key] += 1
        self.by_address[address] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            _drop(self.by_key, key)
            _drop(self.by_address, address)


def _key(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            if scheme.lower() == b"bearer" and token.strip():
                # A digest: the counts never hold a secret.
                return hashlib.sha256(token.strip()).hexdigest()[:32]
    return ""


def _address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


def _drop(counts: Counter[str], name: str) -> None:
    counts[name] -= 1
    if counts[name] <= 0:
        del counts[name]  # no entry per client that ever came: bounded by the streams open


async def _refuse(send: Send, reason: str) -> None:
    body = error_json(
        "too_many_streams", f"{reason}; close one, or retry in {RETRY_AFTER_SECONDS} s"
    )
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
