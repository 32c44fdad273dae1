"""Output for people (rich) and for scripts (``--json``)."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

console = Console()
errors = Console(stderr=True)


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, default=str) + "\n")
    sys.stdout.flush()


def fail(message: str, *, hint: str | None = None, code: int = 1) -> None:
    errors.print(f"[bold red]error:[/] {message}")
    if hint:
        errors.print(f"[dim]{hint}[/]")
    raise SystemExit(code)
