"""``paperclip plugins``: what this installation would load at startup, and why not."""

from __future__ import annotations

import click

from paperclip.cli_kit.output import console, emit_json, errors


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def plugins(as_json: bool) -> None:
    """List built-in and installed plugins: version, hooks, hook-API range, status.

    Exits 1 when the plugins would stop `paperclip serve` (strict mode, a conflict).
    """
    from paperclip.cli_kit.settings import load_settings
    from paperclip.container import Container

    # Discovery only: no database is started.
    report = Container(settings=load_settings()).plugin_host().report()
    if as_json:
        emit_json(report.as_dict())
    else:
        from rich.table import Table

        table = Table()
        for column in ("name", "distribution", "entry point", "hooks", "hook API"):
            table.add_column(column, overflow="fold")  # wrap, never cut: names are the point
        table.add_column("status", overflow="fold", min_width=8)
        for p in report.plugins:
            status = (
                "[green]loaded[/]" if p.status == "loaded" else f"[yellow]skipped[/]: {p.reason}"
            )
            table.add_row(
                p.name,
                f"{p.distribution} {p.version}".strip(),
                p.entry_point,
                "\n".join(h.removeprefix("paperclip_") for h in p.hooks) or "-",
                "built in" if p.builtin else p.hook_api or "-",
                status,
            )
        console.print(f"hook API [bold]{report.hook_api}[/]")
        console.print(table)
        for problem in report.problems:
            errors.print(f"[bold red]error:[/] {problem}")
    if report.problems:
        raise SystemExit(1)
