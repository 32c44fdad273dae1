"""What a log line is about: the run, issue and company of the work in progress.

Set where a run's work happens (``with about(run_id=..., company_id=...)``); a
``contextvars`` variable, so each asyncio task sees its own and a task started
inside inherits it. The JSON log format writes it into every line
(``paperclip.logging``); nothing else reads it.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from contextvars import ContextVar

FIELDS = ("run_id", "issue_id", "company_id")

_about: ContextVar[dict[str, str] | None] = ContextVar("paperclip_log_about", default=None)

MEMORY = 4096
"""Runs whose issue and company are remembered (the oldest forgotten first)."""
_runs: dict[str, dict[str, str]] = {}


def remember(run_id: uuid.UUID, *, issue_id: uuid.UUID | None, company_id: uuid.UUID) -> None:
    """The issue and company of a run, for lines that name only the run (a runner's message)."""
    key = str(run_id)
    _runs.pop(key, None)
    _runs[key] = {"company_id": str(company_id)} | ({"issue_id": str(issue_id)} if issue_id else {})
    while len(_runs) > MEMORY:
        del _runs[next(iter(_runs))]


def current() -> dict[str, str]:
    """The fields set for the work in progress (none outside of any)."""
    return dict(_about.get() or {})


@contextlib.contextmanager
def about(
    *,
    run_id: uuid.UUID | str | None = None,
    issue_id: uuid.UUID | str | None = None,
    company_id: uuid.UUID | str | None = None,
) -> Iterator[None]:
    """Log lines written inside are about this run, issue and company (those given)."""
    given = {"run_id": run_id, "issue_id": issue_id, "company_id": company_id}
    known = _runs.get(str(run_id), {}) if run_id is not None else {}
    fields = {
        **(_about.get() or {}),
        **known,
        **{k: str(v) for k, v in given.items() if v is not None},
    }
    token = _about.set(fields)
    try:
        yield
    finally:
        _about.reset(token)
