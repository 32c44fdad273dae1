"""``paperclip routines``: a company's routines, their next runs and history, from a running server."""

from __future__ import annotations

import json
import uuid
from typing import Any

import click

from paperclip.cli_kit.client import ApiClient, url_option
from paperclip.cli_kit.output import console, emit_json, fail

company_option = click.option(
    "--company", help="Its id, name or issue prefix (default: the only company)."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


@click.group("routines")
def routines() -> None:
    """Routines: issues made by themselves on a schedule, a webhook or a call (docs/routines.md)."""


def _routine(client: ApiClient, company: dict[str, Any], ref: str) -> dict[str, Any]:
    """A routine of ``company`` by name (as people name it) or id."""
    base = f"/companies/{company['id']}/routines"
    try:
        return dict(client.get(f"{base}/{uuid.UUID(ref)}"))
    except ValueError:
        pass
    cursor, found = None, []
    while True:
        page = client.get(base, limit=200, cursor=cursor)
        found += [r for r in page["items"] if r["name"].casefold() == ref.casefold()]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    if len(found) != 1:
        fail(
            f"no routine {ref!r} in {company['name']}"
            if not found
            else f"{ref!r} names several routines",
            hint="Name it as `paperclip routines list` shows it, or give its id.",
        )
    return dict(found[0])


def _schedule(routine: dict[str, Any]) -> str:
    if not routine["enabled"]:
        return "disabled"
    if routine["cron"] is None:
        return "no schedule"
    return f"{routine['cron']} ({routine['timezone']})"


@routines.command("list")
@company_option
@url_option
@json_option
def list_routines(company: str | None, url: str, as_json: bool) -> None:
    """Every routine of the company, with its schedule and next run."""
    client = ApiClient(url)
    found = client.company(company)
    items = client.get(f"/companies/{found['id']}/routines", limit=200)["items"]
    if as_json:
        emit_json(items)
        return
    if not items:
        console.print("no routine yet")
    for r in items:
        following = r["next_runs"][0] if r["next_runs"] else "-"
        hook = ", webhook" if r["webhook"] else ""
        console.print(
            f"[bold]{r['name']}[/]  {_schedule(r)}{hook}  next {following}  "
            f"[dim]{r['concurrency']}, {r['catch_up']}[/]",
            highlight=False,
            soft_wrap=True,
        )


@routines.command("show")
@click.argument("routine")
@company_option
@url_option
@json_option
def show(routine: str, company: str | None, url: str, as_json: bool) -> None:
    """ROUTINE's template, next runs and latest executions (ROUTINE: its name or id)."""
    client = ApiClient(url)
    found = client.company(company)
    r = _routine(client, found, routine)
    recent = client.get(f"/companies/{found['id']}/routines/{r['id']}/executions", limit=10)
    if as_json:
        emit_json({**r, "executions": recent["items"]})
        return
    console.print(f"[bold]{r['name']}[/] ({_schedule(r)})", highlight=False)
    console.print(f"  issue     {r['title']} [{r['priority']}]", highlight=False, soft_wrap=True)
    console.print(f"  policies  {r['concurrency']}, {r['catch_up']} (cap {r['catch_up_cap']})")
    if r["webhook_path"]:
        console.print(
            f"  webhook   POST {client.url}{r['webhook_path']}", highlight=False, soft_wrap=True
        )
    for slot in r["next_runs"]:
        console.print(f"  next      {slot}", highlight=False, soft_wrap=True)
    if r["missed_slots"]:
        console.print(f"  missed    {r['missed_slots']} late slot(s) not run")
    _executions(recent["items"])


def _executions(items: list[dict[str, Any]]) -> None:
    for e in items:
        why = f" ({e['reason']})" if e["reason"] else ""
        issue = f" issue {e['issue_id']}" if e["issue_id"] else ""
        console.print(
            f"  {e['slot_at']}  {e['trigger']:<7} {e['status']}{why}{issue}",
            highlight=False,
            soft_wrap=True,
        )


@routines.command("run")
@click.argument("routine")
@company_option
@url_option
@click.option("--key", help="An idempotency key: the same key again runs nothing more.")
@click.option("--payload", help="A JSON object shown to the agent under the issue.")
@json_option
def run(
    routine: str, company: str | None, url: str, key: str | None, payload: str | None, as_json: bool
) -> None:
    """Run ROUTINE now: one execution, decided by its concurrency policy."""
    try:
        data = json.loads(payload) if payload else {}
    except ValueError:
        fail("--payload is not JSON", code=2)
    if not isinstance(data, dict):
        fail("--payload must be a JSON object", code=2)
    client = ApiClient(url)
    found = client.company(company)
    r = _routine(client, found, routine)
    body: dict[str, Any] = {"payload": data} | ({"idempotency_key": key} if key else {})
    e = client.request("POST", f"/companies/{found['id']}/routines/{r['id']}/run", json=body)
    if as_json:
        emit_json(e)
        return
    if e["issue_id"]:
        issue = client.get(f"/companies/{found['id']}/issues/{e['issue_id']}")
        console.print(f"{e['status']}: {issue['identifier']} {issue['title']}", highlight=False)
    else:
        console.print(f"{e['status']} ({e['reason']})", highlight=False)
    if e["deduplicated"]:
        console.print("[dim]this key ran before: nothing was run again[/]")


@routines.command("history")
@click.argument("routine")
@company_option
@url_option
@click.option("--limit", type=click.IntRange(1, 200), default=20, show_default=True)
@json_option
def history(routine: str, company: str | None, url: str, limit: int, as_json: bool) -> None:
    """ROUTINE's executions, newest first."""
    client = ApiClient(url)
    found = client.company(company)
    r = _routine(client, found, routine)
    items = client.get(f"/companies/{found['id']}/routines/{r['id']}/executions", limit=limit)
    if as_json:
        emit_json(items["items"])
        return
    if not items["items"]:
        console.print("no execution yet")
    _executions(items["items"])


def _set_enabled(routine: str, company: str | None, url: str, enabled: bool) -> None:
    client = ApiClient(url)
    found = client.company(company)
    r = _routine(client, found, routine)
    changed = client.request(
        "PATCH", f"/companies/{found['id']}/routines/{r['id']}", json={"enabled": enabled}
    )
    console.print(f"{changed['name']}: {_schedule(changed)}", highlight=False)


@routines.command("enable")
@click.argument("routine")
@company_option
@url_option
def enable(routine: str, company: str | None, url: str) -> None:
    """Enable ROUTINE: its schedule starts again from now."""
    _set_enabled(routine, company, url, True)


@routines.command("disable")
@click.argument("routine")
@company_option
@url_option
def disable(routine: str, company: str | None, url: str) -> None:
    """Disable ROUTINE: no slot runs, and its triggers are refused, until it is enabled."""
    _set_enabled(routine, company, url, False)
