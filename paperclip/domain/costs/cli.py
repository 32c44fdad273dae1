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
@url_option
@click.option("--json", "as_json", is_flag=True)
def costs(
    company: str | None,
    group_by: str,
    since: str | None,
    until: str | None,
    url: str,
    as_json: bool,
) -> None:
    """What a company spent, summed by agent, project, issue, model, provider or day."""
    client = ApiClient(url)
    found = client.company(company)
    summary = client.get(
        f"/companies/{found['id']}/costs", group_by=group_by, since=since, until=until
    )
    if as_json:
        emit_json(summary)
        return
    table = Table(title=f"{found['name']}: costs by {group_by}", show_lines=False)
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
