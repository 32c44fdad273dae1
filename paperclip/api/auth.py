"""Who is calling: resolved once per request by a guard, then read by handlers as ``actor``."""

from __future__ import annotations

import hmac
import re
import uuid
from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from paperclip.common.actor import LOCAL_OPERATOR, Actor
from paperclip.domain.keys.api_keys import KEY_PREFIX as API_KEY_PREFIX
from paperclip.domain.runs.run_tokens import RUN_TOKEN_PREFIX
from paperclip.errors import ForbiddenError, NotFoundError, UnauthorizedError
from paperclip.http.access import ACTOR_KEY, Access, authorize, route_access
from paperclip.operator_token import cookie_name, token_file
from paperclip.settings import DeploymentMode


def bearer_token(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    header = connection.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def admit(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
    """The guard of every route: who is calling (``authenticate``), then may they (``authorize``).

    One guard, not two: Litestar copies the route handler for each guard it runs.
    """
    await authenticate(connection, handler)
    await authorize(connection, handler)


async def authenticate(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    """Resolve the actor, or answer 401 (public routes need none)."""
    if route_access(handler) is Access.PUBLIC:
        return
    app_state = connection.app.state
    token = bearer_token(connection)
    # A run token is checked in every mode: an agent never becomes the operator.
    if token is not None and token.startswith(RUN_TOKEN_PREFIX):
        actor = await app_state.run_tokens.authenticate(token)
        if actor is None:
            raise UnauthorizedError(
                "the run token is not valid or its run ended", code="invalid_run_token"
            )
        check_run_scope(connection, actor)
        connection.state[ACTOR_KEY] = actor
        return
    if app_state.settings.deployment_mode is DeploymentMode.LOCAL_TRUSTED:
        connection.state[ACTOR_KEY] = await local_caller(connection, token)
        return
    if token is None:
        raise UnauthorizedError("an API key is required: Authorization: Bearer <key>")
    connection.state[ACTOR_KEY] = await _key_holder(connection, token)


async def local_caller(connection: ASGIConnection[Any, Any, Any, Any], token: str | None) -> Actor:
    """Without login: the operator, who shows the operator token (a bearer token, or the
    board's cookie); or the holder of an API key; anyone else is refused.

    With ``operator_token_required`` off, every caller is the operator (as on a machine
    only its user may reach).
    """
    expected: str | None = connection.app.state.operator_token
    if expected is None:
        return LOCAL_OPERATOR
    if token is not None and hmac.compare_digest(token.encode(), expected.encode()):
        return LOCAL_OPERATOR
    if token is not None and token.startswith(API_KEY_PREFIX):
        return await _key_holder(connection, token)
    cookie = connection.cookies.get(cookie_name(connection.headers.get("host")))
    if token is None and cookie and hmac.compare_digest(cookie.encode(), expected.encode()):
        return LOCAL_OPERATOR
    where = token_file(connection.app.state.settings.data_dir)
    raise UnauthorizedError(
        f"this server acts for its operator only: send the operator token in {where} "
        "(Authorization: Bearer <token>), or open the board through the URL `paperclip serve` "
        "printed (`paperclip board` prints it again)",
        code="operator_token_required",
    )


async def _key_holder(connection: ASGIConnection[Any, Any, Any, Any], token: str) -> Actor:
    actor = await connection.app.state.api_keys.authenticate(token)
    if actor is None:
        raise UnauthorizedError("the API key is not valid or was revoked", code="invalid_api_key")
    return actor  # type: ignore[no-any-return]


RUN_TOKEN_ROUTES = frozenset(
    {
        ("GET", "/api/companies/{company_id}/runs/{run_id}"),
        ("GET", "/api/companies/{company_id}/runs/{run_id}/events"),
        ("GET", "/api/companies/{company_id}/runs/{run_id}/events/stream"),
        ("GET", "/api/companies/{company_id}/runs/{run_id}/turns"),
        ("GET", "/api/companies/{company_id}/runs/{run_id}/tool-calls"),
        ("GET", "/api/companies/{company_id}/agents/{agent_id}"),
        ("GET", "/api/companies/{company_id}/issues/{issue_id}"),
        ("GET", "/api/companies/{company_id}/issues/{issue_id}/comments"),
        ("POST", "/api/companies/{company_id}/issues/{issue_id}/comments"),
    }
)
"""What a run token may do over HTTP: read its own run, agent and issue and the
issue's comments, and comment there (docs/security.md). Its tools need nothing
here: they reach the control plane through the runner, as the run's tool calls."""

_PARAM_TYPE = re.compile(r"\{(\w+):[^}]*\}")


def check_run_scope(connection: ASGIConnection[Any, Any, Any, Any], actor: Actor) -> None:
    """A run token acts only as its own run, agent and company, on ``RUN_TOKEN_ROUTES``.

    Another company's, agent's, run's or issue's id in the path is answered
    like a missing one; any other route is ``run_token_forbidden``.
    """
    params = connection.path_params
    if "company_id" not in params:
        raise ForbiddenError(
            "a run token acts only inside its own company", code="run_token_forbidden"
        )
    if params["company_id"] != actor.company_id:
        raise NotFoundError.of("company", params["company_id"])
    if "agent_id" in params and str(params["agent_id"]) != actor.id:
        raise NotFoundError.of("agent", params["agent_id"])
    if "run_id" in params and params["run_id"] != actor.run_id:
        raise NotFoundError.of("run", params["run_id"])
    if "issue_id" in params and _is_uuid(params["issue_id"]):
        if uuid.UUID(params["issue_id"]) != actor.issue_id:
            raise NotFoundError.of("issue", params["issue_id"])
    # An issue named by its identifier is resolved, then held to the run's issue, by the
    # one dependency that resolves it (paperclip.domain.issues.issue_refs).
    template = _PARAM_TYPE.sub(r"{\1}", connection.scope.get("path_template", ""))
    method = connection.scope.get("method", "GET")
    if (method, template.rstrip("/")) not in RUN_TOKEN_ROUTES:
        raise ForbiddenError(
            "a run token reads its own run, agent and issue and the issue's comments, and "
            "comments there",
            code="run_token_forbidden",
        )


def _is_uuid(value: object) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
