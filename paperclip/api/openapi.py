"""The OpenAPI document and its browser UI, served offline.

Litestar builds the document from the handlers; :func:`complete` then adds
what is true of every operation and Litestar does not say: the bearer
security scheme, the statuses every route may answer (the gate's refusals,
validation, authentication), ``HEAD`` beside every ``GET``, and
``additionalProperties: false`` on the bodies that refuse unknown fields.
The UI's scripts come from the ``swagger-ui-bundle-v2`` wheel, served here.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import msgspec
from litestar import Litestar, Router
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import (
    Components,
    OpenAPIMediaType,
    OpenAPIResponse,
    Operation,
    Reference,
    Schema,
    SecurityScheme,
)
from litestar.static_files import create_static_files_router
from paperclip_hookspecs.providers import ProviderKind

import paperclip
from paperclip.domain.agents.openapi_providers import describe_providers
from paperclip.http.access import Access, access, route_access
from paperclip.http.errors import HTTP_CODES, ErrorBody

DOCS_PATH = "/api/docs"
ASSETS_PATH = f"{DOCS_PATH}/assets"
SECURITY_SCHEME = "bearer"


def openapi_config() -> OpenAPIConfig:
    """The document at ``/api/docs/openapi.json`` and Swagger UI at ``/api/docs``, public."""
    from swagger_ui_bundle import swagger_ui_path

    assets = create_static_files_router(
        path="/assets",
        directories=[swagger_ui_path],
        opt=access(Access.PUBLIC),
        include_in_schema=False,
        name="docs-assets",
    )
    router = Router(
        DOCS_PATH, route_handlers=[assets], opt=access(Access.PUBLIC), include_in_schema=False
    )
    return OpenAPIConfig(
        title="Paperclip",
        version=paperclip.__version__,
        path=DOCS_PATH,
        openapi_router=router,
        render_plugins=[
            SwaggerRenderPlugin(
                js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
                css_url=f"{ASSETS_PATH}/swagger-ui.css",
                standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
                favicon=f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon-32x32.png'>",
                path="/",
            )
        ],
    )


def complete(app: Litestar, *, authenticated: bool, providers: Sequence[ProviderKind]) -> None:
    """Add what holds for every operation to the app's document (built once, then served).

    ``authenticated``: every operation but the public ones needs a bearer token (a key, or
    without login the operator token); otherwise none does.

    ``providers``: the provider kinds this server's plugins offer; the agent
    bodies are described by their names and config schemas.
    """
    document = app.openapi_schema
    components = document.components
    if not isinstance(components, Components):  # pragma: no cover - Litestar always sets one
        return
    components.security_schemes = {
        SECURITY_SCHEME: SecurityScheme(
            type="http",
            scheme="bearer",
            description="An API key (`pck_…`; `paperclip keys create`), an agent's run token "
            "(`pcr_…`), or without login (local_trusted) the operator token (`pco_…`, in "
            "<data dir>/operator-token; the board sends it as a cookie).",
        )
    }
    _forbid_unknown_fields(components)
    describe_providers(components, providers)
    public = _public_operations(app)
    error = _error_schema(components)
    for path, item in (document.paths or {}).items():
        for method in ("get", "post", "patch", "put", "delete"):
            operation: Operation | None = getattr(item, method)
            if operation is None:
                continue
            is_public = (method.upper(), path) in public
            _add_errors(operation, path, error, public=is_public)
            if is_public:
                operation.security = []
            else:
                # With the operator token off a request needs no credential, but a run token is
                # still read.
                operation.security = (
                    [{SECURITY_SCHEME: []}]
                    if authenticated
                    else [
                        {},
                        {SECURITY_SCHEME: []},
                    ]
                )
        if item.get is not None and item.head is None:
            item.head = _head_of(item.get)


def _public_operations(app: Litestar) -> set[tuple[str, str]]:
    found = set()
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            if route_access(handler) is Access.PUBLIC:
                for method in handler.http_methods:
                    found.add((method, route.path_format))
    return found


def _error_schema(components: Components) -> Reference:
    name = ErrorBody.__name__
    if name not in components.schemas:
        components.schemas[name] = Schema(
            type="object",  # type: ignore[arg-type]
            required=["code", "message"],
            properties={
                "code": Schema(type="string"),  # type: ignore[arg-type]
                "message": Schema(type="string"),  # type: ignore[arg-type]
                "details": Schema(),
            },
        )
    return Reference(ref=f"#/components/schemas/{name}")


def _add_errors(operation: Operation, path: str, error: Reference, *, public: bool) -> None:
    """The statuses any route may answer, beside those its handler declared."""
    statuses = {400, 403}  # the gate: Host, origin, query; validation
    if not public:
        statuses.add(401)
    if "{" in path:
        statuses.add(404)  # the company (or another id) is not found, or not the caller's
    if operation.request_body is not None:
        statuses |= {413, 415, 422}
    if any(getattr(p, "name", None) == "cursor" for p in operation.parameters or []):
        statuses.add(422)  # invalid_cursor
    responses = operation.responses if operation.responses is not None else {}
    for status in sorted(statuses):
        # Litestar's own 400 describes its default body, not ours: always replaced.
        if status == 400 or str(status) not in responses:
            responses[str(status)] = OpenAPIResponse(
                description=HTTP_CODES.get(status, "error"),
                content={"application/json": OpenAPIMediaType(schema=error)},
            )
    operation.responses = responses


def _head_of(get: Operation) -> Operation:
    """``HEAD``: the ``GET``'s statuses and headers, no body."""
    head = copy.copy(get)
    head.operation_id = f"{get.operation_id}Head" if get.operation_id else None
    head.summary = f"{get.summary or get.operation_id or ''} (headers only)".strip()
    head.responses = {
        status: OpenAPIResponse(description=response.description, headers=response.headers)
        if isinstance(response, OpenAPIResponse)
        else response
        for status, response in (get.responses or {}).items()
    }
    return head


API_MODULES = ("paperclip.api.", "paperclip.domain.", "paperclip.http.")
"""Where the API's request and response structs live: the app's own routes, each domain's
routes and schemas, and what every route shares."""


def _forbid_unknown_fields(components: Components) -> None:
    """Bodies whose struct refuses unknown fields say so: ``additionalProperties: false``."""
    structs = _api_structs()
    for name, schema in components.schemas.items():
        struct = structs.get(name)
        if struct is not None and struct.__struct_config__.forbid_unknown_fields:
            schema.additional_properties = False


def _api_structs() -> dict[str, type[msgspec.Struct]]:
    """Every request and response struct of the API's modules, by class name."""
    found: dict[str, type[msgspec.Struct]] = {}
    pending: list[type[msgspec.Struct]] = [msgspec.Struct]
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if sub.__module__.startswith(API_MODULES):
                found[sub.__name__] = sub
    return found
