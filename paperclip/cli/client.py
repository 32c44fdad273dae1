"""The HTTP API from the command line: a server's URL, its key, and the names people use.

Client commands talk to a running server like any other client (``--url``,
``PAPERCLIP_URL``; a key in ``PAPERCLIP_API_KEY`` when the server asks for
one) and never open the database. People name things as they see them: a
company by its name or issue prefix, an issue by its identifier (``PAP-1``);
ids work too.
"""

from __future__ import annotations

import os
import re
import uuid
from typing import Any

import click
import httpx

from paperclip.cli.output import fail

IDENTIFIER = re.compile(r"^([A-Z][A-Z0-9]+)-(\d+)$")


def default_url() -> str:
    return os.environ.get("PAPERCLIP_URL") or (
        f"http://127.0.0.1:{os.environ.get('PAPERCLIP_PORT', '3100')}"
    )


url_option = click.option(
    "--url",
    default=default_url,
    show_default="PAPERCLIP_URL, else http://127.0.0.1:3100",
    help="The server's base URL.",
)


class ApiClient:
    """A running server's API; every failure becomes a one-line message, never a traceback."""

    def __init__(self, url: str) -> None:
        headers = {}
        if key := os.environ.get("PAPERCLIP_API_KEY"):
            headers["Authorization"] = f"Bearer {key}"
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=f"{self.url}/api", headers=headers, timeout=30)

    def request(self, method: str, path: str, **options: Any) -> Any:
        try:
            answer = self.http.request(method, path, **options)
        except httpx.HTTPError as exc:
            fail(
                f"cannot reach the server at {self.url}: {exc}",
                hint="Start it with `paperclip serve`, or give its address with --url "
                "(PAPERCLIP_URL).",
            )
        if answer.status_code >= 400:
            try:
                body = answer.json()
                message = f"{body.get('code', answer.status_code)}: {body.get('message', '')}"
            except ValueError:
                message = f"HTTP {answer.status_code}"
            hint = (
                "Set PAPERCLIP_API_KEY to a key of this server (`paperclip keys create`)."
                if answer.status_code == 401
                else None
            )
            fail(message, hint=hint)
        return answer.json() if answer.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def company(self, ref: str | None, *, for_issue: str | None = None) -> dict[str, Any]:
        """A company by id, name or issue prefix; the only one when ``ref`` is None (or the
        one whose prefix the issue identifier ``for_issue`` carries)."""
        items = self.get("/companies", limit=200)["items"]
        if ref is None and for_issue is not None and (match := IDENTIFIER.match(for_issue)):
            ref = match.group(1)
        if ref is None:
            if len(items) == 1:
                return dict(items[0])
            fail("which company? there are several", hint="Name one with --company.")
        found = [
            c
            for c in items
            if ref in (c["id"], c["name"], c["issue_prefix"]) or ref.upper() == c["issue_prefix"]
        ]
        if len(found) != 1:
            fail(
                f"no company {ref!r}" if not found else f"{ref!r} names several companies",
                hint="Give its id (`GET /api/companies`).",
            )
        return dict(found[0])

    def issue(self, company: dict[str, Any], ref: str) -> dict[str, Any]:
        """An issue of ``company`` by id or identifier (``PAP-1``)."""
        try:
            return dict(self.get(f"/companies/{company['id']}/issues/{uuid.UUID(ref)}"))
        except ValueError:
            pass
        found = self.get(f"/companies/{company['id']}/issues", identifier=ref, limit=1)["items"]
        if not found:
            fail(
                f"no issue {ref!r} in {company['name']}", hint="Give its identifier (PAP-1) or id."
            )
        return dict(found[0])
