"""The org chart as a hook sees it: where an agent stands among its colleagues (hook API 1.11).

The prompt hooks get it in ``TaskSource.chain``: the assigned agent's manager and
its direct reports, whom it may hand parts of its task to (the ``delegate`` tool).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Colleague:
    """An agent of the company as another agent's brief names it (hook API 1.11)."""

    id: str
    name: str
    role: str = ""
    status: str = ""
    """``active``, ``paused``...: a paused report is given no work."""


@dataclass(frozen=True, slots=True)
class ChainOfCommand:
    """Where the agent stands in its company's org chart (hook API 1.11)."""

    manager: Colleague | None = None
    """Whom it reports to; None: the top."""
    reports: tuple[Colleague, ...] = ()
    """Its direct reports (the core lists at most 20), whom it may hand parts to."""
    more_reports: int = 0
    """Direct reports beyond those listed."""
