"""Budget alerts: a budget crossed its warning threshold or its limit (hook API 1.8).

Every implementation is called (a notification, not a decision), after the
cost that crossed it is committed, once per budget, level and month. Keep it
quick: hooks run within the control plane's time budget; send a message from
a thread of your own rather than waiting for a remote server here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from paperclip_hookspecs._markers import hookspec


@dataclass(frozen=True, slots=True)
class BudgetAlert:
    """A budget's month crossed a line."""

    level: Literal["warning", "exceeded"]
    """``warning``: ``warn_percent`` of the limit is spent; ``exceeded``: all of it (no new run
    starts, live runs stop at their next tool call)."""
    company_id: str
    budget_id: str
    scope: Literal["company", "agent", "project"]
    scope_id: str
    month: str
    """``YYYY-MM`` in the company's time zone."""
    limit_micros: int
    spent_micros: int
    warn_percent: int
    currency: str = "USD"


@hookspec
def paperclip_budget_alert(alert: BudgetAlert) -> None:
    """A budget crossed its warning threshold or its limit this month.

    Called for every plugin that implements it, once per budget, level and
    month, after the cost that crossed the line is committed; the return value
    is ignored. The built-in implementation logs it; a plugin may notify
    people (a webhook, a chat message), from a thread of its own.

    Example::

        @hookimpl
        def paperclip_budget_alert(alert):
            if alert.level == "exceeded":
                pager.send_soon(f"budget {alert.budget_id} spent for {alert.month}")
    """
