"""``paperclip runs``: a company's runs (list, show) and one run followed live (tail), from a
running server. A run is named by its id, or by its issue (``PAP-1``: the issue's latest)."""

from __future__ import annotations

import json
import time
from typing import Any

import click
import httpx
from rich.markup import escape

from paperclip.cli_kit.client import ApiClient, ListGroup, company_option, json_option, url_option
from paperclip.cli_kit.output import columns, console, emit_json, errors, took, when
from paperclip.domain.runs.transcript import Transcript

RUN_STATUSES = ["queued", "running", "succeeded", "failed", "cancelled"]
STREAM_WAIT = 60
"""Seconds one events stream stays open on a live run; then it is opened again from where
it stopped (the server bounds every stream)."""
RECONNECT_SECONDS = 120
"""How long `runs tail` keeps trying a server that went away (a restart, say) before it
gives up."""


@click.group("runs", cls=ListGroup)
def runs() -> None:
    """A company's runs (bare: list them, newest first); `runs tail` follows one live."""


def _issue_names(client: ApiClient, company: dict[str, Any], rows: list[dict]) -> dict[str, str]:
    """Issue id -> identifier, for the issues these runs belong to."""
    ids = {r["issue_id"] for r in rows if r["issue_id"]}
    base = f"/companies/{company['id']}/issues"
    return {i: (client.find(f"{base}/{i}") or {}).get("identifier", "?") for i in ids}


@runs.command("list")
@click.option("--issue", help="Only the runs of this issue (PAP-1, or an id).")
@click.option("--agent", help="Only the runs of this agent (name or id).")
@click.option("--status", type=click.Choice(RUN_STATUSES), help="Only runs in this status.")
@click.option("--limit", default=20, show_default=True, help="At most this many, newest first.")
@company_option
@url_option
@json_option
def list_runs(
    issue: str | None,
    agent: str | None,
    status: str | None,
    limit: int,
    company: str | None,
    url: str,
    as_json: bool,
) -> None:
    """The company's runs, newest first: id, status, issue, agent, when, how long, error."""
    client = ApiClient(url)
    found = client.company(company, for_issue=issue)
    filters: dict[str, Any] = {"status": status}
    if issue:
        filters["issue_id"] = client.issue(found, issue)["id"]
    if agent:
        filters["agent_id"] = client.agent(found, agent)["id"]
    rows = client.newest(f"/companies/{found['id']}/runs", max(limit, 0), **filters)
    if as_json:
        emit_json(rows)
        return
    agents, issues = client.agent_names(found), _issue_names(client, found, rows)
    columns(
        [
            [
                r["id"],
                r["status"],
                issues.get(r["issue_id"] or "", "-"),
                agents.get(r["agent_id"], "?"),
                when(r["created_at"]),
                took(r["started_at"], r["finished_at"]),
                r["error_code"] or "",
            ]
            for r in rows
        ],
        header=["RUN", "STATUS", "ISSUE", "AGENT", "CREATED", "TOOK", "ERROR"],
    )


@runs.command("show")
@click.argument("run")
@company_option
@url_option
@json_option
def show(run: str, company: str | None, url: str, as_json: bool) -> None:
    """RUN (an id, or an issue's identifier for its latest run) with its turns."""
    client = ApiClient(url)
    found = client.company(company, for_issue=run, for_run=run)
    row = client.run(found, run)
    turns = client.get(f"/companies/{found['id']}/runs/{row['id']}/turns")["items"]
    if as_json:
        emit_json(row | {"turns": turns})
        return
    agent = client.agent_names(found).get(row["agent_id"], row["agent_id"])
    issue = _issue_names(client, found, [row]).get(row["issue_id"] or "", "no issue")
    reason = f" ({row['status_reason']})" if row["status_reason"] else ""
    console.print(f"run [bold]{row['id']}[/]: {row['status']}{reason}", highlight=False)
    console.print(f"  issue     {issue}", highlight=False)
    console.print(f"  agent     {escape(agent)} ({row['provider']})", highlight=False)
    console.print(
        f"  created   {when(row['created_at'])}; took "
        f"{took(row['started_at'], row['finished_at'])}",
        highlight=False,
    )
    if row["error_code"]:
        message = escape(row["error_message"] or "")
        console.print(f"  error     {row['error_code']}: {message}", highlight=False)
    if row["answer"]:
        console.print(f"  answer    {escape(row['answer'].strip())}", highlight=False)
    for turn in turns:
        code = f" ({turn['error_code']})" if turn["error_code"] else ""
        console.print(
            f"  turn {turn['number']}    {turn['kind']}, {turn['status']}{code}, "
            f"took {took(turn['started_at'], turn['finished_at'])}",
            highlight=False,
        )


@runs.command("tail")
@click.argument("run")
@click.option(
    "--wait",
    "wait_seconds",
    default=60.0,
    show_default=True,
    help="For an issue without a run yet: how long to wait for its first.",
)
@company_option
@url_option
@json_option
def tail(run: str, wait_seconds: float, company: str | None, url: str, as_json: bool) -> None:
    """Follow RUN live, from its start, until it ends: the agent's messages, its tool calls
    with their results, progress reports, turns. RUN: an id, or an issue (PAP-1) for its
    latest run. Exits 0 when the run succeeded, 1 when it did not."""
    client = ApiClient(url)
    found = client.company(company, for_issue=run, for_run=run)
    row = client.run(found, run, wait=wait_seconds)
    path = f"/companies/{found['id']}/runs/{row['id']}/events/stream"
    if not as_json:
        errors.print(f"[dim]following run {row['id']} ({row['status']})[/]", highlight=False)
    transcript, after, lost_since = Transcript(), 0, None
    while True:
        try:
            for kind, data in client.stream(path, params={"after_seq": after, "wait": STREAM_WAIT}):
                lost_since = None
                if kind == "run_event":
                    event = json.loads(data)
                    after = int(event["seq"])
                    _show(transcript.feed(event), as_json)
                elif kind == "end":
                    end = json.loads(data)
                    _show(transcript.flush(), as_json)
                    raise SystemExit(0 if end.get("status") == "succeeded" else 1)
        except httpx.HTTPError as exc:
            # The server restarting, another replica answering next: go on from the last seq.
            lost_since = lost_since or time.monotonic()
            if time.monotonic() - lost_since > RECONNECT_SECONDS:
                client.unreachable(exc)
            time.sleep(1)


def _show(entries: list, as_json: bool) -> None:
    for entry in entries:
        if as_json:
            emit_json(entry.as_json())
        else:
            console.print(entry.line(), soft_wrap=True, highlight=False, markup=False)
