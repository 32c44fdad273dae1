"""``paperclip companies``: the server's companies (list, show, create), from a running server."""

from __future__ import annotations

import click
from rich.markup import escape

from paperclip.cli_kit.client import ApiClient, ListGroup, json_option, url_option
from paperclip.cli_kit.output import columns, console, emit_json, when


@click.group("companies", cls=ListGroup)
def companies() -> None:
    """The companies you can see (bare: list them)."""


@companies.command("list")
@url_option
@json_option
def list_companies(url: str, as_json: bool) -> None:
    """Every company: its issue prefix, name, its last issue number, its id."""
    rows = ApiClient(url).items("/companies")
    if as_json:
        emit_json(rows)
        return
    columns(
        [[c["issue_prefix"], c["name"], str(c["issue_counter"]), c["id"]] for c in rows],
        header=["PREFIX", "NAME", "LAST ISSUE", "ID"],
    )


@companies.command("show")
@click.argument("company")
@url_option
@json_option
def show(company: str, url: str, as_json: bool) -> None:
    """One company (COMPANY: its name, issue prefix or id)."""
    found = ApiClient(url).company(company)
    if as_json:
        emit_json(found)
        return
    console.print(f"[bold]{escape(found['name'])}[/] ({found['issue_prefix']})", highlight=False)
    console.print(f"  id       {found['id']}", highlight=False)
    last = found["issue_counter"]
    numbered = f"last number {found['issue_prefix']}-{last}" if last else "none yet"
    console.print(f"  issues   {numbered}", highlight=False)
    console.print(f"  created  {when(found['created_at'])}", highlight=False)


@companies.command("create")
@click.argument("name")
@click.option("--prefix", help="Its issues' identifier prefix (QS makes QS-1); from NAME if unset.")
@url_option
@json_option
def create(name: str, prefix: str | None, url: str, as_json: bool) -> None:
    """Create a company named NAME."""
    body = {"name": name} | ({"issue_prefix": prefix.upper()} if prefix else {})
    made = ApiClient(url).post("/companies", body)
    if as_json:
        emit_json(made)
        return
    console.print(
        f"created company [bold]{escape(made['name'])}[/] ({made['issue_prefix']}) {made['id']}",
        highlight=False,
    )
