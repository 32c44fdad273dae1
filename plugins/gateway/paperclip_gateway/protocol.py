"""The OpenClaw gateway's WebSocket protocol, client side: handshake, requests, events.

Frames (JSON text): requests ``{type: "req", id, method, params}``, responses
``{type: "res", id, ok, payload | error}`` and events ``{type: "event",
event, payload, seq?}``. The gateway first sends ``connect.challenge``
(``{nonce, ts}``); the client answers with ``connect`` (protocol 4, client,
role and scopes, shared secret, the device's signature of the nonce) and
gets ``hello-ok``. A request may be answered more than once: ``agent`` answers
``accepted`` at once and its final status when the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

from paperclip_gateway import __version__
from paperclip_gateway.device import DeviceIdentity

logger = logging.getLogger(__name__)

PROTOCOL = 4
CLIENT_ID = "gateway-client"
CLIENT_MODE = "backend"
ROLE = "operator"
SCOPES = ("operator.read", "operator.write")
MAX_FRAME = 32 * 1024 * 1024


class GatewayError(Exception):
    """A refused request or handshake (``code`` as the gateway says), or a lost connection."""

    def __init__(self, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable


@dataclass(frozen=True, slots=True)
class Credentials:
    token: str | None = None
    password: str | None = None


class GatewayConnection:
    """One authenticated WebSocket to a gateway. ``events`` ends with None when it closes."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._answers: dict[str, asyncio.Queue[Mapping[str, Any]]] = {}
        self.events: asyncio.Queue[Mapping[str, Any] | None] = asyncio.Queue()
        self.hello: Mapping[str, Any] = {}
        self._reader: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()

    @classmethod
    async def open(
        cls,
        url: str,
        credentials: Credentials,
        identity: DeviceIdentity,
        *,
        wait_seconds: float,
    ) -> GatewayConnection:
        """Connect and complete the handshake; GatewayError if the gateway refuses."""
        try:
            ws = await asyncio.wait_for(
                websockets.connect(
                    url, max_size=MAX_FRAME, compression=None, open_timeout=wait_seconds
                ),
                wait_seconds,
            )
        except (OSError, TimeoutError, websockets.WebSocketException) as exc:
            raise GatewayError(
                "UNREACHABLE", f"cannot connect to {url}: {exc}", retryable=True
            ) from None
        self = cls(ws)
        try:
            challenge = await asyncio.wait_for(self._frame(), wait_seconds)
            if challenge.get("event") != "connect.challenge":
                raise GatewayError(
                    "PROTOCOL",
                    f"expected connect.challenge, got {challenge.get('event') or challenge.get('type')}",
                )
            payload = challenge.get("payload") or {}
            nonce, ts = str(payload.get("nonce") or ""), payload.get("ts")
            if not nonce or not isinstance(ts, int):
                raise GatewayError("PROTOCOL", "connect.challenge without nonce or ts")
            secret = credentials.token or credentials.password or ""
            params: dict[str, Any] = {
                "minProtocol": PROTOCOL,
                "maxProtocol": PROTOCOL,
                "client": {
                    "id": CLIENT_ID,
                    "version": __version__,
                    "platform": "linux",
                    "mode": CLIENT_MODE,
                },
                "role": ROLE,
                "scopes": list(SCOPES),
                "caps": [],
                "commands": [],
                "permissions": {},
                "auth": {
                    k: v
                    for k, v in (("token", credentials.token), ("password", credentials.password))
                    if v
                },
                "locale": "en-US",
                "userAgent": f"paperclip-gateway/{__version__}",
                "device": identity.sign_connect(
                    client_id=CLIENT_ID,
                    client_mode=CLIENT_MODE,
                    role=ROLE,
                    scopes=SCOPES,
                    token=secret,
                    nonce=nonce,
                    signed_at=ts,
                    platform="linux",
                ),
            }
            await ws.send(
                json.dumps({"type": "req", "id": "connect", "method": "connect", "params": params})
            )
            while True:
                frame = await asyncio.wait_for(self._frame(), wait_seconds)
                if frame.get("type") == "res" and frame.get("id") == "connect":
                    break
        except BaseException:
            await ws.close()
            raise
        if not frame.get("ok"):
            await ws.close()
            raise _error_of(frame)
        self.hello = frame.get("payload") or {}
        self._reader = asyncio.create_task(self._read(), name="gateway-reader")
        return self

    async def request(
        self, method: str, params: Mapping[str, Any], wait_seconds: float
    ) -> Mapping[str, Any]:
        """Send a request and return its first answer's payload; GatewayError if refused."""
        answers = await self.send(method, params)
        return await self.next_answer(answers, wait_seconds)

    async def send(
        self, method: str, params: Mapping[str, Any]
    ) -> asyncio.Queue[Mapping[str, Any]]:
        """Send a request; its answers arrive on the returned queue, in order."""
        if self.closed.is_set():
            raise GatewayError("CLOSED", "the gateway connection is closed", retryable=True)
        request_id = f"paperclip-{next(self._ids)}"
        answers: asyncio.Queue[Mapping[str, Any]] = asyncio.Queue()
        self._answers[request_id] = answers
        frame = {"type": "req", "id": request_id, "method": method, "params": dict(params)}
        try:
            await self._ws.send(json.dumps(frame))
        except websockets.WebSocketException as exc:
            raise GatewayError(
                "CLOSED", f"the gateway connection closed: {exc}", retryable=True
            ) from None
        return answers

    async def next_answer(
        self, answers: asyncio.Queue[Mapping[str, Any]], wait_seconds: float | None
    ) -> Mapping[str, Any]:
        try:
            frame = await asyncio.wait_for(answers.get(), wait_seconds)
        except TimeoutError:
            raise GatewayError(
                "TIMEOUT", f"no answer within {wait_seconds:g}s", retryable=True
            ) from None
        if frame.get("type") == "closed":
            raise GatewayError("CLOSED", "the gateway connection closed", retryable=True)
        if not frame.get("ok"):
            raise _error_of(frame)
        payload = frame.get("payload")
        return payload if isinstance(payload, Mapping) else {}

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._ws.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._reader), 5)

    async def _frame(self) -> Mapping[str, Any]:
        while True:
            raw = await self._ws.recv()
            try:
                frame = json.loads(raw)
            except ValueError:
                continue
            if isinstance(frame, Mapping):
                return frame

    async def _read(self) -> None:
        try:
            while True:
                frame = await self._frame()
                kind = frame.get("type")
                if kind == "res":
                    answers = self._answers.get(str(frame.get("id")))
                    if answers is not None:
                        answers.put_nowait(frame)
                elif kind == "event":
                    await self.events.put(frame)
        except (websockets.WebSocketException, OSError) as exc:
            logger.info("gateway connection closed: %s", exc)
        finally:
            self.closed.set()
            for answers in self._answers.values():
                answers.put_nowait({"type": "closed"})
            await self.events.put(None)


def _error_of(frame: Mapping[str, Any]) -> GatewayError:
    error = frame.get("error") if isinstance(frame.get("error"), Mapping) else {}
    details = error.get("details") if isinstance(error.get("details"), Mapping) else {}
    code = str(details.get("code") or error.get("code") or "ERROR")
    return GatewayError(
        code, str(error.get("message") or "refused"), retryable=bool(error.get("retryable"))
    )
