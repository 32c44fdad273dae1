"""``paperclip workspace``: an issue's worktree, its work product and diff, its merge, from a
running server."""

from __future__ import annotations

import sys

import click
import httpx
from rich.markup import escape

from paperclip.cli_kit.client import ApiClient, url_option
from paperclip.cli_kit.output import console, emit_json, errors

MERGE_TIMEOUT = httpx.Timeout(30, read=660)
"""The server waits for the runner's answer (PAPERCLIP_MERGE_WAIT_SECONDS, up to 600 s)."""

company_option = click.option(
    "--company", help="Its id, name or issue prefix (default: the issue identifier's)."
)


@click.group("workspace")
def workspace() -> None:
    """An issue's worktree: where it is, what changed, its diff, its merge (see
    docs/workspaces.md)."""


def _workspace(url: str, issue: str, company: str | None) -> tuple[ApiClient, str]:
    client = ApiClient(url)
    found = client.company(company, for_issue=issue)
    row = client.issue(found, issue)
    return client, f"/companies/{found['id']}/issues/{row['id']}/workspace"


@workspace.command("show")
@click.argument("issue")
@company_option
@url_option
@click.option("--json", "as_json", is_flag=True)
def show(issue: str, company: str | None, url: str, as_json: bool) -> None:
    """Where ISSUE's worktree is and what it holds (ISSUE: PAP-1, or an id)."""
    client, path = _workspace(url, issue, company)
    ws = client.get(path)
    if as_json:
        emit_json(ws)
        return
    console.print(f"[bold]{ws['branch']}[/] ({ws['status']}) on runner {ws['runner_name']}")
    console.print(f"  folder  {ws['path']}", soft_wrap=True, highlight=False)
    console.print(f"  base    {ws['base_ref']} at {(ws['base_commit'] or '?')[:12]}")
    product = ws["work_product"]
    if product:
        state = "uncommitted changes" if product["dirty"] else "clean"
        console.print(f"  head    {product['head'][:12]}, {product['ahead']} ahead, {state}")
        for change in product["files"]:
            counts = (
                f"+{change['added']} -{change['deleted']}"
                if change["added"] is not None
                else "binary"
            )
            console.print(f"  {change['status']:>2} {change['path']}  {counts}", highlight=False)
    if ws["saved_ref"]:
        console.print(f"  uncommitted changes saved at {ws['saved_ref']}")


@workspace.command("diff")
@click.argument("issue")
@company_option
@url_option
def diff(issue: str, company: str | None, url: str) -> None:
    """ISSUE's changes against its base commit, committed or not, as of its latest turn."""
    client, path = _workspace(url, issue, company)
    answer = client.get(f"{path}/diff")
    sys.stdout.write(answer["diff"])
    if answer["truncated"]:
        errors.print("[dim](cut at the runner's limit, PAPERCLIP_RUNNER_DIFF_LIMIT_BYTES)[/]")


@workspace.command("forget")
@click.argument("issue")
@company_option
@url_option
def forget(issue: str, company: str | None, url: str) -> None:
    """Forget ISSUE's worktree (its runner is gone for good): the next run makes a new one."""
    client, path = _workspace(url, issue, company)
    ws = client.request("DELETE", path)
    console.print(f"forgotten: {ws['error_message']}")


@workspace.command("merge")
@click.argument("issue")
@click.option("--close", is_flag=True, help="Also set the issue done, with the merge.")
@company_option
@url_option
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
def merge(issue: str, close: bool, company: str | None, url: str, as_json: bool) -> None:
    """Merge ISSUE's branch into its project's base branch, by the runner holding its worktree,
    with the project's merge strategy. Exits 1 when it is refused (nothing changed then)."""
    client, path = _workspace(url, issue, company)
    try:
        answer = client.send(
            "POST", f"{path}/merge", json={"close_issue": close}, timeout=MERGE_TIMEOUT
        )
    except httpx.HTTPError as exc:
        client.unreachable(exc)
    if answer.status_code >= 400:
        _refused(client, answer, as_json)
    merged = answer.json()
    if as_json:
        emit_json(merged)
        return
    console.print(
        f"merged {merged['branch']} into {merged['base_ref']} ({merged['strategy']}): "
        f"{merged['merged_commits']} commit(s); {merged['base_ref']} is now "
        f"{merged['commit'][:12]}",
        highlight=False,
    )
    console.print(f"the issue is {merged['issue_status']}", highlight=False)


def _refused(client: ApiClient, answer: httpx.Response, as_json: bool) -> None:
    """A refused merge: its message and the files concerned, then exit 1."""
    try:
        body = answer.json()
    except ValueError:
        client.refused(answer)
        return
    if not isinstance(body, dict) or answer.status_code in (401, 403):
        client.refused(answer)
        return
    if as_json:
        emit_json(body)
        raise SystemExit(1)
    line = f"{body.get('code', answer.status_code)}: {body.get('message', '')}"
    errors.print(f"[bold red]error:[/] {escape(line)}", soft_wrap=True, highlight=False)
    for name in body.get("conflicts") or body.get("files") or []:
        errors.print(f"  {escape(str(name))}", soft_wrap=True, highlight=False)
    raise SystemExit(1)
