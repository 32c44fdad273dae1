"""The board: the web page at ``/``, served by the server itself (no CDN, no build step).

Its files are plain HTML, CSS and JavaScript modules in ``paperclip/board``;
the page reads and writes only through the public API under ``/api``, with
the caller's own credential. Every answer here carries a Content-Security-Policy
that allows nothing but this server: no inline script, no other origin, no
framing.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any

from litestar import Request, Response, get
from litestar.datastructures import Cookie
from litestar.exceptions import NotFoundException

from paperclip.http.access import Access, access
from paperclip.operator_token import QUERY_PARAMETER, cookie_name

COOKIE_SECONDS = 30 * 24 * 3600
"""How long the board's sign-in lasts in a browser (the token itself lasts until its file goes)."""

BOARD_DIR = Path(__file__).resolve().parent.parent / "board"

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def _file(relative: str) -> Response[bytes]:
    path = (BOARD_DIR / relative.lstrip("/")).resolve()
    media_type = MEDIA_TYPES.get(path.suffix)
    # Only files of the board's own folder, of the kinds it ships.
    if media_type is None or not path.is_relative_to(BOARD_DIR) or not path.is_file():
        raise NotFoundException(f"no board file {relative!r}")
    return Response(path.read_bytes(), media_type=media_type, headers=SECURITY_HEADERS)


@get("/", opt=access(Access.PUBLIC), include_in_schema=False)
async def board_page(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The board's single page; its views are chosen by the URL's fragment.

    ``/?token=…`` (the URL ``paperclip serve`` prints without login) signs the
    operator in: the token becomes an HttpOnly, SameSite=Strict cookie, and a
    redirect takes it out of the address bar (and out of any link copied from it).
    """
    if QUERY_PARAMETER in request.query_params:
        return _sign_in(request, request.query_params[QUERY_PARAMETER])
    return _file("index.html")


def _sign_in(request: Request[Any, Any, Any], token: str) -> Response[bytes]:
    expected: str | None = request.app.state.operator_token
    cookies = []
    # A wrong token sets nothing: the board then says how to get in.
    if expected is not None and hmac.compare_digest(token.encode(), expected.encode()):
        cookies.append(
            Cookie(
                key=cookie_name(request.headers.get("host")),
                value=token,
                path="/",
                max_age=COOKIE_SECONDS,
                httponly=True,
                samesite="strict",
            )
        )
    return Response(
        b"",
        status_code=303,
        media_type="text/plain",
        headers={**SECURITY_HEADERS, "Location": "/"},
        cookies=cookies,
    )


@get("/board/{name:path}", opt=access(Access.PUBLIC), include_in_schema=False)
async def board_asset(name: str) -> Response[bytes]:
    """A stylesheet or script module of the board."""
    return _file(name)


BOARD_ROUTES = [board_page, board_asset]
