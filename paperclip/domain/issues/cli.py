"""``paperclip issues`` and ``paperclip comments``: a company's issues and what was said on
them, from a running server. An issue is named by its identifier (``PAP-1``, any case),
which also says its company; an agent by its name."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.markup import escape

from paperclip.cli_kit.client import ApiClient, ListGroup, company_option, json_option, url_option
from paperclip.cli_kit.output import columns, console, emit_json, fail, when

STATUSES = ["backlog", "todo", "in_progress", "in_review", "blocked", "done", "cancelled"]
PRIORITIES = ["low", "medium", "high", "urgent"]


def readable(status: str) -> str:
    """``in_progress`` as people say it: ``in progress``."""
    return status.replace("_", " ")


@click.group("issues", cls=ListGroup)
def issues() -> None:
    """A company's issues (bare: list them, newest first)."""


def _issue(url: str, ref: str, company: str | None) -> tuple[ApiClient, dict, dict]:
    client = ApiClient(url)
    found = client.company(company, for_issue=ref)
    return client, found, client.issue(found, ref)


def _project_id(client: ApiClient, company: dict[str, Any], ref: str) -> str:
    projects = client.items(f"/companies/{company['id']}/projects", cap=1000)
    found = [p for p in projects if ref in (p["id"], p["name"])]
    if len(found) != 1:
        fail(f"no project {ref!r} in {company['name']}", hint="Give its name or id.")
    return str(found[0]["id"])


@issues.command("list")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(STATUSES),
    help="Only issues in this status (repeat for several).",
)
@click.option("--assignee", help="Only issues assigned to this agent (name or id).")
@click.option("--project", help="Only issues of this project (name or id).")
@click.option(
    "--search", "-q", help="Only issues with this in their title, description or identifier."
)
@click.option("--limit", default=50, show_default=True, help="At most this many, newest first.")
@company_option
@url_option
@json_option
def list_issues(
    statuses: tuple[str, ...],
    assignee: str | None,
    project: str | None,
    search: str | None,
    limit: int,
    company: str | None,
    url: str,
    as_json: bool,
) -> None:
    """The company's issues, newest first: identifier, status, priority, assignee, title."""
    client = ApiClient(url)
    found = client.company(company)
    filters: dict[str, Any] = {"q": search}
    if assignee:
        filters["assignee_agent_id"] = client.agent(found, assignee)["id"]
    if project:
        filters["project_id"] = _project_id(client, found, project)
    path = f"/companies/{found['id']}/issues"
    rows = [
        row
        for status in statuses or [None]
        for row in client.newest(path, limit, **filters, status=status)
    ]
    rows = sorted(rows, key=lambda r: r["number"], reverse=True)[: max(limit, 0)]
    if as_json:
        emit_json(rows)
        return
    names = client.agent_names(found)
    columns(
        [
            [
                r["identifier"],
                readable(r["status"]),
                r["priority"],
                names.get(r["assignee_agent_id"] or "", "-"),
                r["title"],
            ]
            for r in rows
        ],
        header=["ISSUE", "STATUS", "PRIORITY", "ASSIGNEE", "TITLE"],
    )


@issues.command("show")
@click.argument("issue")
@company_option
@url_option
@json_option
def show(issue: str, company: str | None, url: str, as_json: bool) -> None:
    """ISSUE (PAP-1, or an id) with its comments and its five latest runs."""
    client, found, row = _issue(url, issue, company)
    base = f"/companies/{found['id']}"
    comments = client.items(f"{base}/issues/{row['id']}/comments")
    runs = list(reversed(client.newest(f"{base}/runs", 5, issue_id=row["id"])))
    if as_json:
        emit_json(row | {"comments": comments, "runs": runs})
        return
    names = client.agent_names(found)
    assignee = names.get(row["assignee_agent_id"] or "", "nobody")
    console.print(f"[bold]{row['identifier']}[/] {escape(row['title'])}", highlight=False)
    console.print(
        f"  {readable(row['status'])}, {row['priority']} priority, assigned to "
        f"{escape(assignee)}; created {when(row['created_at'])}",
        highlight=False,
    )
    if row["description"].strip():
        console.print()
        console.print(escape(row["description"].strip()), highlight=False)
    if comments:
        console.print()
        _print_comments(comments, names)
    if runs:
        console.print()
        for run in runs:
            code = f" ({run['error_code']})" if run["error_code"] else ""
            console.print(
                f"  run {run['id']}  {run['status']}{code}  {when(run['created_at'])}",
                highlight=False,
            )


def _print_comments(comments: list[dict[str, Any]], names: dict[str, str]) -> None:
    for c in comments:
        author = names.get(c["author_agent_id"] or "", c["author_user_id"] or "someone")
        body = "(deleted)" if c["deleted_at"] else c["body"].strip()
        edited = " (edited)" if c["edited_at"] and not c["deleted_at"] else ""
        console.print(f"[bold]{escape(author)}[/] {when(c['created_at'])}{edited}", highlight=False)
        console.print("  " + escape(body).replace("\n", "\n  "), highlight=False)


@issues.command("create")
@click.argument("title")
@click.option("--description", "-d", default="", help="What to do (the agent's assignment).")
@click.option("--assignee", help="The agent to give it to (name or id): it wakes at once.")
@click.option("--project", help="Its project (name or id): its runs work in a worktree.")
@click.option("--priority", type=click.Choice(PRIORITIES), default="medium", show_default=True)
@click.option("--parent", help="Its parent issue (PAP-1, or an id).")
@company_option
@url_option
@json_option
def create(
    title: str,
    description: str,
    assignee: str | None,
    project: str | None,
    priority: str,
    parent: str | None,
    company: str | None,
    url: str,
    as_json: bool,
) -> None:
    """Create an issue titled TITLE."""
    client = ApiClient(url)
    found = client.company(company, for_issue=parent)
    body: dict[str, Any] = {"title": title, "description": description, "priority": priority}
    if assignee:
        body["assignee_agent_id"] = client.agent(found, assignee)["id"]
    if project:
        body["project_id"] = _project_id(client, found, project)
    if parent:
        body["parent_id"] = client.issue(found, parent)["id"]
    made = client.post(f"/companies/{found['id']}/issues", body)
    if as_json:
        emit_json(made)
        return
    to = f", assigned to {escape(assignee)}" if assignee else ""
    console.print(f"created [bold]{made['identifier']}[/] {escape(title)}{to}", highlight=False)


@issues.command("assign")
@click.argument("issue")
@click.argument("agent", required=False)
@click.option("--nobody", is_flag=True, help="Take it from its assignee instead.")
@company_option
@url_option
@json_option
def assign(
    issue: str, agent: str | None, nobody: bool, company: str | None, url: str, as_json: bool
) -> None:
    """Give ISSUE to AGENT (name or id), which wakes it; or to --nobody."""
    if (agent is None) == (not nobody):
        fail("name an agent, or --nobody", hint="paperclip issues assign PAP-1 coder", code=2)
    client, found, row = _issue(url, issue, company)
    target = None if nobody else client.agent(found, str(agent))
    changed = client.patch(
        f"/companies/{found['id']}/issues/{row['id']}",
        {"assignee_agent_id": target["id"] if target else None},
    )
    if as_json:
        emit_json(changed)
        return
    who = escape(target["name"]) if target else "nobody"
    console.print(f"{changed['identifier']} is assigned to {who}", highlight=False)


@issues.command("comment")
@click.argument("issue")
@click.argument("body", required=False)
@company_option
@url_option
@json_option
def comment(issue: str, body: str | None, company: str | None, url: str, as_json: bool) -> None:
    """Comment on ISSUE (BODY, or stdin when BODY is - or missing); it wakes the assignee."""
    if body is None or body == "-":
        body = sys.stdin.read()
    if not body.strip():
        fail("the comment is empty", hint="Give a BODY, or pipe one in.", code=2)
    client, found, row = _issue(url, issue, company)
    made = client.post(f"/companies/{found['id']}/issues/{row['id']}/comments", {"body": body})
    if as_json:
        emit_json(made)
        return
    console.print(f"commented on {row['identifier']} ({made['id']})", highlight=False)


@issues.command("close")
@click.argument("issue")
@click.option("--cancel", is_flag=True, help="Cancelled rather than done.")
@click.option("--comment", "note", help="A last comment, posted first.")
@company_option
@url_option
@json_option
def close(
    issue: str, cancel: bool, note: str | None, company: str | None, url: str, as_json: bool
) -> None:
    """Close ISSUE: done (or --cancel), after an optional last --comment."""
    client, found, row = _issue(url, issue, company)
    path = f"/companies/{found['id']}/issues/{row['id']}"
    if note:
        client.post(f"{path}/comments", {"body": note})
    changed = client.patch(path, {"status": "cancelled" if cancel else "done"})
    if as_json:
        emit_json(changed)
        return
    console.print(f"{changed['identifier']} is {readable(changed['status'])}", highlight=False)


@click.group("comments", cls=ListGroup)
def comments() -> None:
    """What was said on an issue (bare: `paperclip comments PAP-1` lists them)."""


@comments.command("list")
@click.argument("issue")
@company_option
@url_option
@json_option
def list_comments(issue: str, company: str | None, url: str, as_json: bool) -> None:
    """ISSUE's comments, oldest first, with their authors."""
    client, found, row = _issue(url, issue, company)
    rows = client.items(f"/companies/{found['id']}/issues/{row['id']}/comments")
    if as_json:
        emit_json(rows)
        return
    _print_comments(rows, client.agent_names(found))
