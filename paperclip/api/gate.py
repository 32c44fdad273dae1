"""The door: checks every request before routing, and answers refusals itself.

In order: the ``Host`` (``host_not_allowed``), a browser's cross-origin request
in the no-login mode (``cross_origin_refused``), NUL in the query
(``invalid_character``), then the body: only ``application/json``
(``unsupported_media_type``), at most ``max_body_bytes``
(``request_too_large``), well-formed, bounded and storable JSON
(``paperclip.api.json_body``). ``HEAD`` is answered as ``GET`` without the body.
Every answer carries ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any
from urllib.parse import parse_qsl

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from paperclip.api.json_body import BodyRefused, check_json_body
from paperclip.errors import field_details
from paperclip.http.errors import error_json
from paperclip.http.origins import cross_origin, host_allowed

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
ALLOW_PROBE = "PAPERCLIP-ALLOW"


class Refusal(Exception):
    """A request the gate answers itself, with the error body."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details


class ClientGone(Exception):
    """The client went away before its body was in."""


class RequestGate:
    """ASGI middleware around the whole app (routing included)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        local: bool,
        allowed_hosts: Collection[str],
        max_body_bytes: int,
    ) -> None:
        self.app = app
        self.local = local
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if scope["type"] == "http":
            send = _no_sniffing(send)
        try:
            self._check_origin(headers)
            if scope["type"] == "http":
                _check_query(scope)
                receive = await self._checked_body(scope, headers, receive)
        except Refusal as refusal:
            await _refuse(scope, receive, send, refusal)
            return
        except ClientGone:
            return  # mid-body (or cut off by the server's deadline): no one to answer
        if scope["type"] == "http" and scope["method"] == "HEAD":
            scope = {**scope, "method": "GET"}  # type: ignore[assignment]
            send = _without_body(send)
        elif scope["type"] == "http" and scope["method"] == "OPTIONS":
            # Litestar's own OPTIONS answer lists the methods of one handler of the path
            # only; its router's 405 lists them all. Ask it with a method no route has.
            scope = {**scope, "method": ALLOW_PROBE}  # type: ignore[assignment]
            send = _options_answer(send)
        await self.app(scope, receive, send)

    def _check_origin(self, headers: dict[str, str]) -> None:
        host = headers.get("host")
        # In the no-login mode only loopback names are this server's; with login,
        # any name is, unless the operator listed them.
        if (self.local or self.allowed_hosts) and not host_allowed(
            host, loopback=self.local, extra=self.allowed_hosts
        ):
            raise Refusal(
                400,
                "host_not_allowed",
                f"this server does not answer to the host {host!r}; use 127.0.0.1 or localhost "
                "(PAPERCLIP_ALLOWED_HOSTS adds names)",
                field_details("host", "not a host of this server", "header"),
            )
        if self.local and cross_origin(headers.get("origin"), headers.get("sec-fetch-site"), host):
            raise Refusal(
                403,
                "cross_origin_refused",
                "a page of another origin may not use this server: without login it serves "
                "only its own user and its own pages",
            )

    async def _checked_body(
        self, scope: Scope, headers: dict[str, str], receive: Receive
    ) -> Receive:
        declared = headers.get("content-length")
        has_body = (declared not in (None, "0")) or "transfer-encoding" in headers
        if not has_body and scope["method"] not in BODY_METHODS:
            return receive
        media_type = headers.get("content-type")
        if has_body and not _is_json(media_type):
            raise Refusal(
                415,
                "unsupported_media_type",
                f"request bodies must be application/json, not {media_type or 'untyped'}",
                field_details("content-type", "must be application/json", "header"),
            )
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise Refusal(413, "request_too_large", self._too_large())
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                raise ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise Refusal(413, "request_too_large", self._too_large())
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if body:
            try:
                check_json_body(body)
            except BodyRefused as refused:
                details = field_details(refused.field, refused.message) if refused.field else None
                raise Refusal(400, refused.code, refused.message, details) from None
        return _replay(body, receive)

    def _too_large(self) -> str:
        return f"the request body is larger than {self.max_body_bytes} bytes"


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}


def _is_json(media_type: str | None) -> bool:
    if not media_type:
        return False
    kind, _, params = media_type.partition(";")
    charset = params.strip().lower().removeprefix("charset=").strip('"') if params else "utf-8"
    return kind.strip().lower() == "application/json" and charset in {"utf-8", "utf8"}


def _check_query(scope: Scope) -> None:
    raw = scope.get("query_string", b"").decode("latin-1")
    if "%00" not in raw and "\x00" not in raw:
        return
    for name, value in parse_qsl(raw, keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            raise Refusal(
                400,
                "invalid_character",
                "query parameters may not contain NUL",
                field_details(name.replace("\x00", ""), "contains NUL", "query"),
            )


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands over the body read already, then the client's next message."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay  # type: ignore[return-value]


NOSNIFF = (b"x-content-type-options", b"nosniff")


def _no_sniffing(send: Send) -> Send:
    """Every answer says its ``Content-Type`` is meant: a browser never sniffs JSON into HTML."""

    async def nosniff_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            if not any(name.lower() == NOSNIFF[0] for name, _ in headers):
                message = {**message, "headers": [*headers, NOSNIFF]}  # type: ignore[typeddict-item]
        await send(message)

    return nosniff_send  # type: ignore[return-value]


def _without_body(send: Send) -> Send:
    async def head_send(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}  # type: ignore[typeddict-item]
        await send(message)

    return head_send


def _options_answer(send: Send) -> Send:
    """The router's 405 to the probe becomes ``204`` with its ``Allow``; anything else passes."""
    answering = False

    async def options_send(message: Message) -> None:
        nonlocal answering
        if message["type"] == "http.response.start" and message["status"] == 405:
            answering = True
            allow = [(k, v) for k, v in message.get("headers", []) if k.lower() == b"allow"]
            await send({"type": "http.response.start", "status": 204, "headers": allow})
        elif answering and message["type"] == "http.response.body":
            if not message.get("more_body", False):
                await send({"type": "http.response.body", "body": b""})
        else:
            await send(message)

    return options_send  # type: ignore[return-value]


async def _refuse(scope: Scope, receive: Receive, send: Send, refusal: Refusal) -> None:
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        # Closing before accepting makes the server answer the handshake with 403.
        await send({"type": "websocket.close", "code": 4403, "reason": refusal.code})
        return
    body = error_json(refusal.code, refusal.message, refusal.details)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
