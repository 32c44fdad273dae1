"""Who may call each route: every route handler declares an :class:`Access`, checked by a guard.

A route without one is refused (fail closed), and a test walks the app's
routes to prove each has one. Company-bound callers (company keys, run
tokens) see a route of another company exactly like a missing company.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from paperclip.common.actor import Actor
from paperclip.errors import ForbiddenError, NotFoundError, UnauthorizedError
from paperclip.models import KeyRole

ACCESS_KEY = "access"
ACTOR_KEY = "paperclip_actor"


class Access(StrEnum):
    PUBLIC = "public"
    """No credential (health, the API document; the runner socket checks its own)."""
    SIGNED_IN = "signed_in"
    """Any key or the local operator; answers are limited to the caller's companies."""
    READ = "read"
    """Read inside a company: viewer and up."""
    WRITE = "write"
    """Write issues and comments, wake agents: member and up."""
    MANAGE = "manage"
    """Manage a company's agents, settings and keys: admin and up."""
    INSTANCE = "instance"
    """Create or delete companies: instance admins only."""


NEEDED_ROLE = {
    Access.SIGNED_IN: KeyRole.VIEWER,
    Access.READ: KeyRole.VIEWER,
    Access.WRITE: KeyRole.MEMBER,
    Access.MANAGE: KeyRole.ADMIN,
    Access.INSTANCE: KeyRole.INSTANCE_ADMIN,
}


def access(level: Access) -> dict[str, Any]:
    """A route handler's ``opt``: ``@get("/", opt=access(Access.READ))``."""
    return {ACCESS_KEY: level}


def route_access(handler: BaseRouteHandler) -> Access | None:
    value = handler.opt.get(ACCESS_KEY)
    if value is None and getattr(handler, "http_methods", None) == {"OPTIONS"}:
        return Access.PUBLIC  # Litestar's automatic OPTIONS answer: only the allowed methods
    return Access(value) if value is not None else None


async def authorize(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    """After ``authenticate`` (``paperclip.api.auth.admit``): the caller's company and role against the route's access."""
    level = route_access(handler)
    if level is Access.PUBLIC:
        return
    if level is None:
        raise ForbiddenError("this route declares no access rule", code="route_forbidden")
    actor: Actor = connection.state[ACTOR_KEY]
    company_id = connection.path_params.get("company_id")
    if company_id is not None and not actor.sees(company_id):
        raise NotFoundError.of("company", company_id, field="company_id", source="path")
    if actor.type == "agent":
        return  # a run token's own rules were applied when it was resolved (paperclip.api.auth)
    needed = NEEDED_ROLE[level]
    if actor.may(needed):
        return
    if needed is KeyRole.INSTANCE_ADMIN:
        raise ForbiddenError(
            "only an instance-admin key may do this (made with `paperclip keys create`)",
            code="instance_admin_required",
        )
    raise ForbiddenError(
        f"this key's role ({actor.role}) may not do this; it needs {needed.value} or above",
        code="insufficient_role",
    )


def current_actor(request: ASGIConnection[Any, Any, Any, Any]) -> Actor:
    """Dependency ``actor``: the caller the guard resolved."""
    actor = request.state.get(ACTOR_KEY)
    if actor is None:  # a public route asked for an actor: a wiring mistake
        raise UnauthorizedError("this route has no authenticated caller")
    return actor  # type: ignore[no-any-return]
