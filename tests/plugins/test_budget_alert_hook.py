"""``paperclip_budget_alert``: a notification every implementation receives."""

from __future__ import annotations

import logging

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.budgets import BudgetAlert

from paperclip.plugin_host import PluginHost

ALERT = BudgetAlert(
    level="exceeded",
    company_id="c1",
    budget_id="b1",
    scope="agent",
    scope_id="a1",
    month="2026-12",
    limit_micros=5_000_000,
    spent_micros=5_200_000,
    warn_percent=80,
)


class Listener:
    def __init__(self) -> None:
        self.alerts: list[BudgetAlert] = []

    @hookimpl
    def paperclip_budget_alert(self, alert: BudgetAlert) -> None:
        self.alerts.append(alert)


def test_paperclip_budget_alert_reaches_every_plugin_and_the_builtin_logs_it(caplog):
    host = PluginHost.with_builtins()
    one, two = Listener(), Listener()
    host.register(one, "one")
    host.register(two, "two")
    with caplog.at_level(logging.INFO, logger="paperclip.budgets"):
        host.budget_alert(ALERT)
    assert one.alerts == [ALERT] and two.alerts == [ALERT]
    [line] = [r for r in caplog.records if r.name == "paperclip.budgets"]
    assert "agent budget b1" in line.getMessage() and "2026-12" in line.getMessage()
