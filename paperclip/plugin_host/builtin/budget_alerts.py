"""The built-in budget alert: a log line (plugins add their own ways to tell people)."""

from __future__ import annotations

import logging

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.budgets import BudgetAlert

log = logging.getLogger("paperclip.budgets")


@hookimpl(trylast=True)
def paperclip_budget_alert(alert: BudgetAlert) -> None:
    """Log a budget that crossed its warning threshold or its limit."""
    spent = alert.spent_micros / 1_000_000
    limit = alert.limit_micros / 1_000_000
    if alert.level == "exceeded":
        log.warning(
            "the %s budget %s of company %s is spent for %s (%.2f of %.2f %s): no new run "
            "starts and live runs stop at their next tool call",
            alert.scope,
            alert.budget_id,
            alert.company_id,
            alert.month,
            spent,
            limit,
            alert.currency,
        )
    else:
        log.info(
            "the %s budget %s of company %s passed %d%% for %s (%.2f of %.2f %s)",
            alert.scope,
            alert.budget_id,
            alert.company_id,
            alert.warn_percent,
            alert.month,
            spent,
            limit,
            alert.currency,
        )
