"""``paperclip workspace``: an issue's worktree, its work product and diff, from a running server."""

from __future__ import annotations

import sys

import click

from paperclip.cli.client import ApiClient, url_option
from paperclip.cli.output import console, emit_json, errors

company_option = click.option(
    "--company", help="Its id, name or issue prefix (default: the issue identifier's)."
)


@click.group("workspace")
def workspace() -> None:
    """An issue's worktree: where it is, what changed, its diff (see docs/workspaces.md)."""


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
