"""Output for people (rich) and for scripts (``--json``)."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

console = Console()
errors = Console(stderr=True)


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, default=str) + "\n")
    sys.stdout.flush()


def fail(message: str, *, hint: str | None = None, code: int = 1) -> None:
    # soft_wrap: a message is one line, whatever the terminal's width (scripts grep it).
    errors.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    if hint:
        errors.print(f"[dim]{escape(hint)}[/]", soft_wrap=True)
    raise SystemExit(code)
