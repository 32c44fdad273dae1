"""``paperclip costs``: what a company spent, from a running server (docs/costs.md)."""

from __future__ import annotations

import click
from rich.table import Table

from paperclip.cli_kit.client import ApiClient, url_option
from paperclip.cli_kit.output import console, emit_json


def money(micros: int, currency: str = "USD") -> str:
    return f"{micros / 1_000_000:,.4f} {currency}"


@click.command("costs")
@click.option("--company", help="Its id, name or issue prefix (default: the only one).")
@click.option(
    "--by",
    "group_by",
    type=click.Choice(["agent", "project", "issue", "model", "provider", "day"]),
    default="agent",
    show_default=True,
)
@click.option("--since", help="Inclusive: an ISO 8601 time or date (2026-12-01).")
@click.option("--until", help="Exclusive, as --since.")
@click.option("--issue", "issue_ref", help="Only this issue's (its identifier or id).")
@click.option(
    "--with-parts",
    is_flag=True,
    help="With --issue: its parts' too, all the way down (what the whole cost).",
)
@url_option
@click.option("--json", "as_json", is_flag=True)
def costs(
    company: str | None,
    group_by: str,
    since: str | None,
    until: str | None,
    issue_ref: str | None,
    with_parts: bool,
    url: str,
    as_json: bool,
) -> None:
    """What a company spent, summed by agent, project, issue, model, provider or day."""
    client = ApiClient(url)
    found = client.company(company)
    if with_parts and issue_ref is None:
        raise click.UsageError("--with-parts needs --issue")
    issue = client.issue(found, issue_ref) if issue_ref is not None else None
    summary = client.get(
        f"/companies/{found['id']}/costs",
        group_by=group_by,
        since=since,
        until=until,
        issue_id=issue["id"] if issue is not None else None,
        with_parts=str(with_parts).lower() if with_parts else None,
    )
    if as_json:
        emit_json(summary)
        return
    title = f"{found['name']}: costs by {group_by}"
    if issue is not None:
        title += f" of {issue['identifier']}" + (" and its parts" if with_parts else "")
    table = Table(title=title, show_lines=False)
    for column in (group_by, "responses", "input", "cached", "output", "cost"):
        table.add_column(column, justify="left" if column == group_by else "right")
    for group in summary["groups"]:
        totals = group["totals"]
        label = group["name"] or group["key"] or "(none)"
        table.add_row(
            label,
            f"{totals['events']:,}",
            f"{totals['input_tokens']:,}",
            f"{totals['cached_input_tokens']:,}",
            f"{totals['output_tokens']:,}",
            money(totals["cost_micros"]),
        )
    console.print(table)
    totals = summary["totals"]
    line = f"total {money(totals['cost_micros'])} over {totals['events']:,} responses"
    if totals["unpriced_events"]:
        line += f"; {totals['unpriced_events']:,} of them without a price (cost unknown)"
    console.print(line)
