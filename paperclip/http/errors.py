"""One error body everywhere: ``{"code": ..., "message": ..., "details": ...}``.

Where an error is about a field, ``details`` lists ``{"source", "field", "message"}``
entries: ``source`` is ``body``, ``query``, ``path`` or ``header`` and ``field``
the dotted path of the value (``provider_config.model``).
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR, HTTP_503_SERVICE_UNAVAILABLE
from sqlalchemy.exc import DBAPIError

from paperclip.db.availability import is_unavailable
from paperclip.errors import PaperclipError, UnauthorizedError

log = logging.getLogger(__name__)


class FieldError(msgspec.Struct):
    source: str
    """``body``, ``query``, ``path`` or ``header``."""
    field: str
    message: str


class ErrorBody(msgspec.Struct):
    code: str
    message: str
    details: list[FieldError] | None = None


# Litestar's own HTTP exceptions, by status, mapped to stable codes.
HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    409: "conflict",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_input",
    429: "too_many_requests",
    503: "service_unavailable",
    504: "gateway_timeout",
}


def error_json(
    code: str, message: str, details: Any = None, extra: dict[str, Any] | None = None
) -> bytes:
    """The error body, encoded: for answers sent before the app (``paperclip.api.gate``)."""
    return msgspec.json.encode(
        {"code": code, "message": message, "details": details, **(extra or {})}
    )


def _body(
    status: int,
    code: str,
    message: str,
    details: Any = None,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Response[bytes]:
    return Response(
        error_json(code, message, details, extra),
        status_code=status,
        media_type=MediaType.JSON,
        headers=headers,
    )


def paperclip_error(_: Request[Any, Any, Any], exc: PaperclipError) -> Response[bytes]:
    headers = {"www-authenticate": "Bearer"} if isinstance(exc, UnauthorizedError) else None
    return _body(exc.status_code, exc.code, exc.message, exc.details, headers, exc.extra)


def http_error(_: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    status = exc.status_code
    if isinstance(exc, ValidationException):
        return _body(400, "validation_error", "the request is not valid", field_errors(exc.extra))
    if status >= 500:
        log.error("HTTP %s: %s", status, exc.detail)
    headers = dict(exc.headers or {})
    if status == 405 and "allow" in headers:
        headers["allow"] = allow_with_head(headers["allow"])
    return _body(status, HTTP_CODES.get(status, "http_error"), exc.detail, headers=headers or None)


def allow_with_head(allow: str) -> str:
    """Every GET answers HEAD too (``paperclip.api.gate``): say so in ``Allow``."""
    methods = [m.strip() for m in allow.split(",") if m.strip()]
    if "GET" in methods and "HEAD" not in methods:
        methods.append("HEAD")
    return ", ".join(sorted(methods))


def field_errors(extra: Any) -> list[dict[str, str]] | None:
    """Litestar's validation messages as ``{source, field, message}`` entries."""
    if not isinstance(extra, list):
        return None
    found = []
    for item in extra:
        if not isinstance(item, dict):
            continue
        source = str(item.get("source") or "body")
        found.append(
            {
                "source": getattr(item.get("source"), "value", source),
                "field": str(item.get("key") or ""),
                "message": str(item.get("message") or "not valid"),
            }
        )
    return found or None


RETRY_AFTER_SECONDS = 5
"""What a 503 asks a client to wait before trying again."""


def database_unavailable(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """PostgreSQL cannot be reached (down, restarting, out of connections): 503, retry later."""
    log.warning(
        "database unavailable for %s %s: %s", request.method, request.url.path, _describe(exc)
    )
    response = _body(
        HTTP_503_SERVICE_UNAVAILABLE,
        "database_unavailable",
        "the database cannot be reached right now; retry in a few seconds",
    )
    response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def database_error(request: Request[Any, Any, Any], exc: DBAPIError) -> Response[bytes]:
    if is_unavailable(exc):
        return database_unavailable(request, exc)
    # Input the validators let through but PostgreSQL refused (a value out of a
    # column's range, say) is the client's error; anything else is ours.
    sqlstate = getattr(exc.orig, "sqlstate", None) or ""
    if sqlstate.startswith(("22", "23")):
        log.warning(
            "the database refused a value of %s %s: %s", request.method, request.url.path, sqlstate
        )
        return _body(422, "invalid_input", "the database refused a value of this request")
    return internal_error(request, exc)


def internal_error(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    if is_unavailable(exc):
        return database_unavailable(request, exc)
    log.exception("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
    return _body(HTTP_500_INTERNAL_SERVER_ERROR, "internal_error", "internal server error")


EXCEPTION_HANDLERS: dict[type[Exception], Any] = {
    PaperclipError: paperclip_error,
    HTTPException: http_error,
    DBAPIError: database_error,
    Exception: internal_error,
}


def error_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries for the error statuses a route answers beyond the common ones.

    The statuses every route may answer (400, 401, 403, and 413/415 for a body)
    are added to every operation by ``paperclip.api.openapi``.
    """
    return {
        status: ResponseSpec(
            data_container=ErrorBody,
            description=HTTP_CODES.get(status, "error"),
            generate_examples=False,
        )
        for status in sorted(set(statuses))
    }
