"""Page cursors as clients see them: a position, bound to its endpoint and signed.

``<payload>.<mac>``, both base64url: the payload is the position (created_at,
id); the MAC is an HMAC-SHA256 over the endpoint and the payload, keyed with
the installation's ``cursor`` secret (``paperclip.common.server_secrets``).
A cursor altered, forged, or taken to another endpoint (another list, another
company's list, the same list in another sort) is ``422 invalid_cursor``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from litestar import Request

from paperclip.common.queries import Cursor
from paperclip.errors import InvalidInputError
from paperclip.http.pagination import Page

MAC_BYTES = 16


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class CursorCodec:
    secret: bytes

    def _mac(self, scope: str, payload: str) -> bytes:
        message = f"{scope}\n{payload}".encode()
        return hmac.new(self.secret, message, hashlib.sha256).digest()[:MAC_BYTES]

    def encode(self, position: Cursor, scope: str) -> str:
        payload = _b64(json.dumps([position.created_at.isoformat(), str(position.id)]).encode())
        return f"{payload}.{_b64(self._mac(scope, payload))}"

    def decode(self, token: str, scope: str) -> Cursor:
        payload, _, mac = token.partition(".")
        try:
            valid = hmac.compare_digest(_unb64(mac), self._mac(scope, payload))
            if valid:
                created, ident = json.loads(_unb64(payload))
                return Cursor(datetime.fromisoformat(created), uuid.UUID(ident))
        except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
            pass
        raise InvalidInputError(
            "cursor is not valid here: pass the next_cursor this list returned",
            code="invalid_cursor",
            field="cursor",
            source="query",
        )


@dataclass(frozen=True, slots=True)
class Pages:
    """The cursors of one list endpoint (dependency ``pages``)."""

    codec: CursorCodec
    scope: str

    def after(self, cursor: str | None) -> Cursor | None:
        return self.codec.decode(cursor, self.scope) if cursor else None

    def sorted(self, sort: str) -> Pages:
        """The cursors of this list in ``sort``'s order: a position means nothing in another."""
        return self if sort == "created" else Pages(self.codec, f"{self.scope}?sort={sort}")

    def page(self, items: list[Any], next_position: Cursor | None) -> Page[Any]:
        token = self.codec.encode(next_position, self.scope) if next_position else None
        return Page(items, token)


def provide_pages(request: Request[Any, Any, Any]) -> Pages:
    """Bound to the path: the endpoint and the ids in it (the company, the issue)."""
    return Pages(request.app.state.cursor_codec, request.url.path.rstrip("/"))
