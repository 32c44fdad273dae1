"""One error body everywhere: ``{"code": ..., "message": ..., "details": ...}``."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR
from sqlalchemy.exc import DBAPIError

from paperclip.errors import PaperclipError

log = logging.getLogger(__name__)


class ErrorBody(msgspec.Struct):
    code: str
    message: str
    details: Any = None


# Litestar's own HTTP exceptions, by status, mapped to stable codes.
HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_input",
    429: "too_many_requests",
}


def _body(status: int, code: str, message: str, details: Any = None) -> Response[ErrorBody]:
    return Response(
        ErrorBody(code=code, message=message, details=details),
        status_code=status,
        media_type=MediaType.JSON,
    )


def paperclip_error(_: Request[Any, Any, Any], exc: PaperclipError) -> Response[ErrorBody]:
    return _body(exc.status_code, exc.code, exc.message, exc.details)


def http_error(_: Request[Any, Any, Any], exc: HTTPException) -> Response[ErrorBody]:
    status = exc.status_code
    if isinstance(exc, ValidationException):
        return _body(400, "validation_error", "the request is not valid", exc.extra)
    if status >= 500:
        log.error("HTTP %s: %s", status, exc.detail)
    return _body(status, HTTP_CODES.get(status, "http_error"), exc.detail)


def database_error(request: Request[Any, Any, Any], exc: DBAPIError) -> Response[ErrorBody]:
    # Input the validators let through but PostgreSQL refused (a value out of a
    # column's range, say) is the client's error; anything else is ours.
    sqlstate = getattr(exc.orig, "sqlstate", None) or ""
    if sqlstate.startswith(("22", "23")):
        return _body(422, "invalid_input", "the database refused a value of this request")
    return internal_error(request, exc)


def internal_error(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
    log.exception("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
    return _body(HTTP_500_INTERNAL_SERVER_ERROR, "internal_error", "internal server error")


EXCEPTION_HANDLERS: dict[type[Exception], Any] = {
    PaperclipError: paperclip_error,
    HTTPException: http_error,
    DBAPIError: database_error,
    Exception: internal_error,
}


def error_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries for the error statuses a route may answer.

    400 is always listed: any route can refuse a malformed request, and its
    body is ours, not Litestar's default validation schema.
    """
    return {
        status: ResponseSpec(
            data_container=ErrorBody,
            description=HTTP_CODES.get(status, "error"),
            generate_examples=False,
        )
        for status in sorted({400, *statuses})
    }
