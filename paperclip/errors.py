"""Domain errors. Each carries the machine-readable code and HTTP status of the error body."""

from __future__ import annotations

from typing import Any, Literal

FieldSource = Literal["body", "query", "path", "header"]
BODY_KEYS = ("code", "message", "details")


def field_details(field: str, message: str, source: FieldSource = "body") -> list[dict[str, str]]:
    """The ``details`` of an error about one field: where it is, which it is, and why."""
    return [{"source": source, "field": field, "message": message}]


class PaperclipError(Exception):
    """An error a client caused and can act on; rendered as ``{code, message, details}``, plus
    the members of ``extra`` (``{"conflicts": [...]}``) for the few errors that carry more."""

    status_code = 400
    code = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: Any = None,
        field: str | None = None,
        source: FieldSource = "body",
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if details is None and field is not None:
            details = field_details(field, message, source)
        self.details = details
        self.extra = {k: v for k, v in (extra or {}).items() if k not in BODY_KEYS}


class NotFoundError(PaperclipError):
    status_code = 404
    code = "not_found"

    @classmethod
    def of(
        cls,
        entity: str,
        entity_id: object,
        *,
        field: str | None = None,
        source: FieldSource = "body",
    ) -> PaperclipError:
        """``<entity>_not_found``; ``field`` names the request field that referred to it.

        A 404 is about the URL's own resource (``source="path"``, or no field).
        An id that a body or query field refers to is invalid input (422, same
        code): the resource the request is about exists, the reference does not.
        """
        error_class = cls if field is None or source == "path" else UnknownReferenceError
        return error_class(
            f"{entity} {entity_id} not found",
            code=f"{entity}_not_found",
            field=field,
            source=source,
        )


class ConflictError(PaperclipError):
    status_code = 409
    code = "conflict"


class InvalidInputError(PaperclipError):
    status_code = 422
    code = "invalid_input"


class UnknownReferenceError(InvalidInputError):
    """A body or query field names an id that does not exist in this company (or is another's)."""


class UnavailableError(PaperclipError):
    """Something the request needs is not there now (a runner away): try again later."""

    status_code = 503
    code = "unavailable"


class TimedOutError(PaperclipError):
    """What the request waited for did not come in time; it may still happen."""

    status_code = 504
    code = "timed_out"


class UnauthorizedError(PaperclipError):
    status_code = 401
    code = "unauthorized"


class ForbiddenError(PaperclipError):
    status_code = 403
    code = "forbidden"
