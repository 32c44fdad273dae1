"""Output for people (rich) and for scripts (``--json``)."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

from rich.console import Console
from rich.markup import escape

console = Console()
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
