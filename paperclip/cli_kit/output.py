"""Output for people (rich) and for scripts (``--json``)."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

from rich.console import Console
from rich.markup import escape

# Lines are not wrapped at the terminal's width (80 columns when it is not a terminal): an
# id or a URL cut in two cannot be copied, nor found by grep.
console = Console(soft_wrap=True)
errors = Console(stderr=True)


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, default=str) + "\n")
    sys.stdout.flush()


def fail(message: str, *, hint: str | None = None, code: int = 1) -> NoReturn:
    """Say what is wrong, then what to do, on one line of stderr, and exit with ``code``."""
    # One line whatever the terminal's width (soft_wrap): scripts grep it, people read it whole.
    line = f"[bold red]error:[/] {escape(message)}"
    if hint:
        stop = "" if message.endswith((".", "?", "!")) else "."
        line += f"{stop} [dim]{escape(hint)}[/]"
    errors.print(line, soft_wrap=True, highlight=False)
    raise SystemExit(code)


def columns(rows: list[list[str]], header: list[str] | None = None) -> None:
    """Rows as aligned columns of plain text, one line each (no wrapping, no cutting: people
    read them, and grep them)."""
    table = ([header] if header else []) + rows
    if not table:
        return
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for n, row in enumerate(table):
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        style = "bold" if header and n == 0 else None
        console.print(line.rstrip(), style=style, soft_wrap=True, highlight=False, markup=False)


def when(value: str | None) -> str:
    """An API timestamp in local time, to the minute; ``-`` for none."""
    if not value:
        return "-"
    from datetime import datetime

    return datetime.fromisoformat(value).astimezone().strftime("%Y-%m-%d %H:%M")


def took(start: str | None, end: str | None) -> str:
    """How long from ``start`` to ``end`` (API timestamps): ``42 s``, ``3 min``; ``-`` for none."""
    if not start or not end:
        return "-"
    from datetime import datetime

    seconds = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    return f"{seconds / 60:.0f} min"
