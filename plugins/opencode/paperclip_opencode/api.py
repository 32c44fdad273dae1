"""The part of OpenCode's HTTP API a run uses: sessions, prompts, abort, and the event stream.

``opencode serve`` answers every request only with HTTP basic auth (user
``opencode``, the password of ``OPENCODE_SERVER_PASSWORD``): without it any
local process could drive the server's shell and files. The driver makes a
fresh password per process.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

USER = "opencode"
PASSWORD_ENV_VAR = "OPENCODE_SERVER_PASSWORD"


class ApiError(Exception):
    """A request failed: the server answered with an error status, or not at all."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class OpenCodeApi:
    """Requests to one ``opencode serve``; each bounded by ``timeout`` seconds."""

    def __init__(self, base_url: str, password: str, timeout: float) -> None:
        self._client = httpx.AsyncClient(
            base_url=base_url,
            auth=(USER, password),
            timeout=timeout,
            trust_env=False,  # loopback: never through a proxy from the environment
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def create_session(self, title: str) -> Mapping[str, Any]:
        """A new session. A title is given so OpenCode does not ask the model for one."""
        return await self._json("POST", "/session", {"title": title})

    async def get_session(self, session_id: str) -> Mapping[str, Any] | None:
        """The session, or None if there is no such session."""
        try:
            return await self._json("GET", f"/session/{session_id}")
        except ApiError as exc:
            if exc.status in (400, 404):
                return None
            raise

    async def prompt(
        self,
        session_id: str,
        text: str,
        *,
        system: str | None = None,
        model: tuple[str, str] | None = None,
    ) -> None:
        """Queue a user message (``prompt_async``): it runs now, or after the running one."""
        body: dict[str, Any] = {"parts": [{"type": "text", "text": text}]}
        if system:
            body["system"] = system
        if model is not None:
            body["model"] = {"providerID": model[0], "modelID": model[1]}
        await self._send("POST", f"/session/{session_id}/prompt_async", body)

    async def messages(self, session_id: str) -> list[Mapping[str, Any]]:
        """The session's stored messages, oldest first: each ``{"info", "parts"}``."""
        response = await self._send("GET", f"/session/{session_id}/message", None)
        try:
            value = response.json()
        except ValueError:
            raise ApiError(f"GET /session/{session_id}/message: not a JSON answer") from None
        if isinstance(value, Mapping):  # a paged answer
            value = value.get("data")
        if not isinstance(value, list):
            raise ApiError(f"GET /session/{session_id}/message: not a list")
        return [m for m in value if isinstance(m, Mapping)]

    async def delete_message(self, session_id: str, message_id: str) -> None:
        """Remove a stored message and its parts from the session."""
        await self._send("DELETE", f"/session/{session_id}/message/{message_id}", None)

    async def abort(self, session_id: str) -> None:
        await self._send("POST", f"/session/{session_id}/abort", None)

    async def events(self) -> AsyncIterator[Mapping[str, Any]]:
        """Every event of ``GET /event`` (``{"type", "properties"}``) until the stream ends."""
        try:
            async with self._client.stream(
                "GET", "/event", timeout=httpx.Timeout(None)
            ) as response:
                if response.status_code != 200:
                    raise ApiError(
                        f"GET /event: HTTP {response.status_code}", status=response.status_code
                    )
                data: list[str] = []
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        data.append(line[5:].lstrip(" "))
                    elif not line and data:
                        try:
                            event = json.loads("\n".join(data))
                        except ValueError:
                            event = None
                        data = []
                        if isinstance(event, Mapping) and isinstance(event.get("type"), str):
                            yield event
        except httpx.TransportError as exc:
            # A server that dies mid-stream ends its chunked body short: the stream ended.
            raise ApiError(f"GET /event: {exc}") from None

    async def _json(self, method: str, path: str, body: Any = None) -> Mapping[str, Any]:
        response = await self._send(method, path, body)
        try:
            value = response.json()
        except ValueError:
            raise ApiError(f"{method} {path}: not a JSON answer") from None
        if not isinstance(value, Mapping):
            raise ApiError(f"{method} {path}: not a JSON object")
        return value

    async def _send(self, method: str, path: str, body: Any) -> httpx.Response:
        try:
            response = await self._client.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise ApiError(f"{method} {path}: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            detail = response.text[:500]
            raise ApiError(
                f"{method} {path}: HTTP {response.status_code} {detail}",
                status=response.status_code,
            )
        return response
