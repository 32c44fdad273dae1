"""The HTTP API from the command line: a server's URL, its key, and the names people use.

Client commands talk to a running server like any other client (``--url``,
``PAPERCLIP_URL``; a key in ``PAPERCLIP_API_KEY`` when the server asks for
one; when a server on this machine without login asks for it, the operator
token of the data dir) and never open the database. People name things as
they see them: a company by its name or issue prefix, an agent by its name,
an issue by its identifier (``PAP-1``); ids work too. Every failure is one line on stderr and
a non-zero exit, never a traceback.

A client command group is built from what is here: ``url_option``,
``company_option`` and ``json_option`` on each command, ``ListGroup`` for a
group whose bare name lists, and ``ApiClient`` for the requests.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import click
import httpx

from paperclip.cli_kit.output import errors, fail
from paperclip.http.origins import is_loopback_name
from paperclip.operator_token import OperatorTokenError, read_token, token_file

IDENTIFIER = re.compile(r"^([A-Za-z][A-Za-z0-9]+)-(\d+)$")
READ_CAP = 10_000
"""The most rows a command reads from one list (50 pages)."""


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
company_option = click.option(
    "--company",
    envvar="PAPERCLIP_COMPANY",
    help="Its name, issue prefix or id (PAPERCLIP_COMPANY; needed when there are several, "
    "unless an issue identifier says which).",
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON (for scripts) instead of text."
)


class ListGroup(click.Group):
    """A group whose bare name lists: ``paperclip issues --status todo`` is ``issues list …``,
    and ``paperclip comments PAP-1`` is ``comments list PAP-1``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        first = args[0] if args else None
        if first is None or (first not in self.commands and first not in ("-h", "--help")):
            args = ["list", *args]
        return super().parse_args(ctx, args)


class ApiClient:
    """A running server's API; every failure becomes a one-line message, never a traceback."""

    def __init__(self, url: str) -> None:
        headers = {}
        if key := os.environ.get("PAPERCLIP_API_KEY"):
            headers["Authorization"] = f"Bearer {key}"
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=f"{self.url}/api", headers=headers, timeout=30)
        self.asked_for_token = False

    def send(self, method: str, path: str, **options: Any) -> httpx.Response:
        """One request; when a server on this machine asks for the operator token, again with it."""
        answer = self.http.request(method, path, **options)
        if answer.status_code == 401 and self.sign_in(answer):
            answer = self.http.request(method, path, **options)  # refused at the door: not done
        return answer

    def sign_in(self, refused: httpx.Response) -> bool:
        """Take the operator token of the data dir, the first time the server asks for it (and
        only a server on this machine): whether there is one to try."""
        if self.asked_for_token or body_code(refused) != "operator_token_required":
            return False
        self.asked_for_token = True
        token = operator_token(self.url)
        if token is None:
            return False
        self.http.headers["Authorization"] = f"Bearer {token}"
        return True

    # Requests

    def request(self, method: str, path: str, **options: Any) -> Any:
        try:
            answer = self.send(method, path, **options)
        except httpx.HTTPError as exc:
            self.unreachable(exc)
        if answer.status_code >= 400:
            self.refused(answer)
        return answer.json() if answer.content else None

    def unreachable(self, exc: Exception) -> None:
        fail(
            f"cannot reach the server at {self.url}: {exc}",
            hint="Start it with `paperclip serve`, or give its address with --url (PAPERCLIP_URL).",
        )

    def refused(self, answer: httpx.Response) -> None:
        try:
            body = answer.json()
            message = f"{body.get('code', answer.status_code)}: {body.get('message', '')}"
        except ValueError:
            message = f"HTTP {answer.status_code} from {answer.request.url}"
        hint = None
        if answer.status_code == 401:
            hint = "Set PAPERCLIP_API_KEY to a key of this server (`paperclip keys create`)."
        if answer.status_code == 401 and body_code(answer) == "operator_token_required":
            hint = (
                "Run this command as the server's user, with its data dir (PAPERCLIP_DATA_DIR): "
                "it reads the operator token there; or set PAPERCLIP_API_KEY."
            )
        fail(message, hint=hint)

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("POST", path, json=body)

    def patch(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("PATCH", path, json=body)

    def items(
        self, path: str, *, cap: int = READ_CAP, say_cut: bool = True, **params: Any
    ) -> list[dict[str, Any]]:
        """Every item of a paged list (``next_cursor``), in its order, at most ``cap``."""
        found: list[dict[str, Any]] = []
        cursor = None
        while len(found) < cap:
            page = self.get(path, **params, cursor=cursor, limit=min(200, cap - len(found)))
            found += page["items"]
            cursor = page.get("next_cursor")
            if cursor is None:
                return found
        if say_cut:
            errors.print(f"[dim](read the first {cap} only)[/]")
        return found

    def newest(self, path: str, limit: int, **params: Any) -> list[dict[str, Any]]:
        """The ``limit`` newest items of a list that sorts (``sort=-created``), newest first."""
        if limit <= 0:
            return []
        return self.items(path, cap=limit, say_cut=False, sort="-created", **params)

    def stream(
        self, path: str, *, params: dict[str, Any], last_id: str | None = None
    ) -> Iterator[tuple[str, str]]:
        """Server-sent events (``event``, ``data``) until the server ends the stream.

        A transport error goes up as ``httpx.HTTPError`` (the caller reconnects from the
        last id it saw); a refusal is a one-line message.
        """
        headers = {"Last-Event-ID": last_id} if last_id else {}
        timeout = httpx.Timeout(30, read=float(params.get("wait", 60)) + 30)
        with self.http.stream(
            "GET", path, params=params, headers=headers, timeout=timeout
        ) as answer:
            if answer.status_code >= 400:
                answer.read()
                if answer.status_code == 401 and self.sign_in(answer):
                    yield from self.stream(path, params=params, last_id=last_id)
                    return
                self.refused(answer)
            event, data = "message", []
            for line in answer.iter_lines():
                if not line:
                    if data:
                        yield event, "\n".join(data)
                    event, data = "message", []
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    value = value.removeprefix(" ")
                    if name == "event":
                        event = value
                    elif name == "data":
                        data.append(value)

    # Names people use

    def company(
        self, ref: str | None, *, for_issue: str | None = None, for_run: str | None = None
    ) -> dict[str, Any]:
        """A company by id, name or issue prefix. When ``ref`` is None: the one whose prefix
        the issue identifier ``for_issue`` carries, or the one holding the run (or issue) whose
        id ``for_run`` is, or the only one."""
        items = self.items("/companies", cap=1000)
        inferred = False
        if ref is None and for_issue is not None and (match := IDENTIFIER.match(for_issue)):
            ref, inferred = match.group(1), True
        if ref is None and for_run is not None and _is_uuid(for_run) and len(items) > 1:
            for company in items:  # ids are unique across companies: the one that has it
                base = f"/companies/{company['id']}"
                if self.find(f"{base}/runs/{for_run}") or self.find(f"{base}/issues/{for_run}"):
                    return dict(company)
        if ref is None:
            if len(items) == 1:
                return dict(items[0])
            fail(
                "which company? there are several" if items else "there is no company yet",
                hint="Name one with --company (or PAPERCLIP_COMPANY)."
                if items
                else "Create one with `paperclip companies create NAME`.",
            )
        found = [
            c for c in items if ref in (c["id"], c["name"]) or ref.upper() == c["issue_prefix"]
        ] or [c for c in items if c["name"].lower() == ref.lower()]
        if not found and inferred and len(items) == 1:
            return dict(items[0])  # an identifier made before the company's prefix changed
        if len(found) != 1:
            fail(
                f"no company {ref!r}" if not found else f"{ref!r} names several companies",
                hint="Name one with --company, by its name, prefix or id "
                "(`paperclip companies` lists them).",
            )
        return dict(found[0])

    def issue(self, company: dict[str, Any], ref: str) -> dict[str, Any]:
        """An issue of ``company`` by id or identifier (``PAP-1``, any case)."""
        found = self.find(f"/companies/{company['id']}/issues/{quote(ref.strip(), safe='')}")
        if found is None:
            fail(
                f"no issue {ref!r} in {company['name']}", hint="Give its identifier (PAP-1) or id."
            )
        return found

    def agent(self, company: dict[str, Any], ref: str) -> dict[str, Any]:
        """An agent of ``company`` by id or name (any case)."""
        agents = self.items(f"/companies/{company['id']}/agents", cap=1000)
        found = [a for a in agents if ref == a["id"]] or [
            a for a in agents if a["name"].lower() == ref.strip().lower()
        ]
        if len(found) != 1:
            fail(
                f"no agent {ref!r} in {company['name']}"
                if not found
                else f"{ref!r} names several agents in {company['name']}",
                hint="`paperclip agents` lists them; give a name or id.",
            )
        return dict(found[0])

    def agent_names(self, company: dict[str, Any]) -> dict[str, str]:
        """Agent id -> name, to show who is who."""
        return {a["id"]: a["name"] for a in self.items(f"/companies/{company['id']}/agents")}

    def find(self, path: str) -> dict[str, Any] | None:
        """The object at ``path``, or None when the server says it is not there (404)."""
        try:
            answer = self.send("GET", path)
        except httpx.HTTPError as exc:
            self.unreachable(exc)
        if answer.status_code == 404:
            return None
        if answer.status_code >= 400:
            self.refused(answer)
        return dict(answer.json())

    def run(self, company: dict[str, Any], ref: str, *, wait: float = 0) -> dict[str, Any]:
        """A run by id, or an issue's latest run by the issue's identifier or id; waits up to
        ``wait`` seconds for an issue's first run."""
        base = f"/companies/{company['id']}"
        if _is_uuid(ref) and (run := self.find(f"{base}/runs/{ref}")) is not None:
            return run
        issue = self.find(f"{base}/issues/{quote(ref.strip(), safe='')}")
        if issue is None:
            fail(
                f"no run or issue {ref!r} in {company['name']}",
                hint="Give a run id, or an issue identifier (PAP-1) for its latest run.",
            )
        deadline = time.monotonic() + wait
        while not (runs := self.newest(f"{base}/runs", 1, issue_id=issue["id"])):
            if time.monotonic() >= deadline:
                fail(
                    f"{issue['identifier']} has no run yet",
                    hint="A run starts when the issue is assigned to an agent, or commented on.",
                )
            time.sleep(0.5)
        return dict(runs[0])


def operator_token(url: str) -> str | None:
    """The operator token of the data dir, for a server on this machine (None: no token
    there, or another host: the token never goes elsewhere)."""
    host = urlsplit(url).hostname
    if host is None or not is_loopback_name(host):
        return None
    from paperclip.cli_kit.settings import load_settings

    try:
        return read_token(token_file(load_settings().data_dir))
    except OperatorTokenError as exc:
        fail(f"the operator token: {exc}")


def body_code(answer: httpx.Response) -> str | None:
    try:
        return str(answer.json().get("code"))
    except (ValueError, AttributeError):
        return None


def _is_uuid(ref: str) -> bool:
    try:
        uuid.UUID(ref)
    except ValueError:
        return False
    return True
