"""Which ``Host`` a request may name, and whether a browser sent it from another origin.

A web page the user visits can make the browser send requests to a server on
loopback: directly (cross-origin, with ``Origin`` and ``Sec-Fetch-Site`` set by
the browser) or through DNS rebinding (its own host name resolving to
127.0.0.1, so the request is "same-origin" but names the page's host). The
first is refused by origin, the second by ``Host``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost"})
BROWSER_OK_FETCH_SITES = frozenset({"same-origin", "none"})
"""``Sec-Fetch-Site`` values of a request the user's own page (or the user) made."""


def host_name(host_header: str) -> str:
    """The name part of a ``Host`` header value, lower-case, without port or brackets."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def is_loopback_name(name: str) -> bool:
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_allowed(host_header: str | None, *, loopback: bool, extra: Collection[str]) -> bool:
    """Whether a request naming ``host_header`` is for this server.

    ``loopback``: loopback names and addresses are this server's (no-login mode).
    ``extra``: further names the operator configured.
    """
    if not host_header:
        return False
    name = host_name(host_header)
    return (loopback and is_loopback_name(name)) or name in extra


def cross_origin(origin: str | None, fetch_site: str | None, host_header: str | None) -> bool:
    """Whether a browser sent this request from a page of another origin.

    Requests without ``Origin`` and ``Sec-Fetch-Site`` are not a browser's
    cross-origin requests (curl, the CLI, the runner): they pass.
    """
    if fetch_site is not None and fetch_site.strip().lower() not in BROWSER_OK_FETCH_SITES:
        return True
    if origin is None:
        return False
    parts = urlsplit(origin.strip())
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        return True  # "null" (sandboxed frames, file: pages) and anything odd
    return parts.netloc.lower() != (host_header or "").strip().lower()
