"""Who is calling: resolved once per request by a guard, then read by handlers as ``actor``."""

from __future__ import annotations

from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from paperclip.errors import UnauthorizedError
from paperclip.services.actor import LOCAL_OPERATOR, Actor
from paperclip.settings import DeploymentMode

ACTOR_KEY = "paperclip_actor"


def bearer_token(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    header = connection.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def authenticate(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    """Guard of every route not marked ``public``: resolve the actor or answer 401."""
    if handler.opt.get("public"):
        return
    app_state = connection.app.state
    if app_state.settings.deployment_mode is DeploymentMode.LOCAL_TRUSTED:
        connection.state[ACTOR_KEY] = LOCAL_OPERATOR
        return
    token = bearer_token(connection)
    if token is None:
        raise UnauthorizedError("an API key is required: Authorization: Bearer <key>")
    key = await app_state.api_keys.authenticate(token)
    if key is None:
        raise UnauthorizedError("the API key is not valid or was revoked", code="invalid_api_key")
    connection.state[ACTOR_KEY] = Actor(type="api_key", id=str(key.id))


def current_actor(request: ASGIConnection[Any, Any, Any, Any]) -> Actor:
    """Dependency ``actor``: the caller the guard resolved."""
    actor = request.state.get(ACTOR_KEY)
    if actor is None:  # a public route asked for an actor: a wiring mistake
        raise UnauthorizedError("this route has no authenticated caller")
    return actor  # type: ignore[no-any-return]
