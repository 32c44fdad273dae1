"""The run's tools, served to the gateway's agent: a relay in front of the runner's MCP endpoint.

A gateway's agent runs elsewhere and reaches MCP servers its operator
configured once (OpenClaw: ``mcp.servers``); it cannot be handed a per-run
endpoint. So the runner listens where the profile says (``--tools-listen``)
and the gateway's config points there with a fixed secret
(``--tools-token-env``). The relay forwards each request, unchanged, to the
MCP endpoint of the run that holds the gateway at that moment, with that run's
own bearer token; the run's token never leaves the runner.

A gateway therefore serves one Paperclip run at a time per relay: a run holds
its *seat* from its ``agent`` request until the run ends; others wait. With
nobody seated, a request is refused (the relay cannot tell whose call it is).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
from paperclip_hookspecs.providers import McpEndpoint
from paperclip_provider_kit.http import HttpServer, Request, Response, serve

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"


@dataclass
class _Relay:
    server: HttpServer
    secret: str
    seat: asyncio.Lock
    client: httpx.AsyncClient
    endpoint: McpEndpoint | None = None
    users: int = 0


_relays: dict[tuple[str, int], _Relay] = {}
_creating = asyncio.Lock()


@asynccontextmanager
async def seat(listen: tuple[str, int], secret: str, endpoint: McpEndpoint) -> AsyncIterator[None]:
    """Hold the relay at ``listen`` for ``endpoint``'s run: its calls go there until exit."""
    relay = await _relay(listen, secret)
    relay.users += 1
    try:
        async with relay.seat:
            relay.endpoint = endpoint
            try:
                yield
            finally:
                relay.endpoint = None
    finally:
        relay.users -= 1
        if relay.users == 0 and _relays.get(listen) is relay:
            del _relays[listen]
            await relay.server.close()
            await relay.client.aclose()


async def _relay(listen: tuple[str, int], secret: str) -> _Relay:
    async with _creating:  # one server per address, even when runs start together
        return await _existing_or_new(listen, secret)


async def _existing_or_new(listen: tuple[str, int], secret: str) -> _Relay:
    relay = _relays.get(listen)
    if relay is not None:
        if not hmac.compare_digest(relay.secret, secret):
            raise ValueError(f"the tool relay at {listen[0]}:{listen[1]} uses another secret")
        return relay
    client = httpx.AsyncClient(timeout=httpx.Timeout(None), trust_env=False)
    holder: list[_Relay] = []

    async def handle(request: Request) -> Response:
        return await _forward(holder[0], request)

    server = await serve(handle, listen[0], listen[1])
    relay = _Relay(server=server, secret=secret, seat=asyncio.Lock(), client=client)
    holder.append(relay)
    _relays[listen] = relay
    logger.info("tool relay for the gateway listening on %s:%d", *listen)
    return relay


async def _forward(relay: _Relay, request: Request) -> Response:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip(), relay.secret):
        return Response(401, {"error": "unauthorized"}, headers={"WWW-Authenticate": "Bearer"})
    if request.path != MCP_PATH:
        return Response(404, {"error": "not found"})
    if request.method != "POST":
        return Response(405, {"error": "method not allowed"}, headers={"Allow": "POST"})
    endpoint = relay.endpoint
    if endpoint is None:
        return Response(503, {"error": "no Paperclip run is using this gateway now"})
    headers = {
        k: v
        for k, v in request.headers.items()
        if k in ("content-type", "accept", "mcp-session-id", "mcp-protocol-version")
    }
    headers["authorization"] = f"Bearer {endpoint.bearer_token}"
    try:
        upstream = await relay.client.post(endpoint.url, content=request.body, headers=headers)
    except httpx.HTTPError as exc:
        return Response(502, {"error": f"the run's tools did not answer: {exc}"})
    kept = {
        k: v for k, v in upstream.headers.items() if k.lower() in ("content-type", "mcp-session-id")
    }
    return Response(upstream.status_code, raw=upstream.content, headers=kept)
