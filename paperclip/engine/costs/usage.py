"""A runner's ``usage`` message: recorded once under the run's lock, charged, alerts told."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime

from paperclip_hookspecs.budgets import BudgetAlert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.domain.costs.costs import Recorded, Usage, record_usage
from paperclip.domain.costs.prices import Price, UnpricedModels
from paperclip.engine.ownership.fence import lock_run
from paperclip.models import Budget, BudgetMonth
from paperclip.plugin_host import PluginHost
from paperclip.wire.messages import Usage as UsageMessage

log = logging.getLogger(__name__)


class UsageRecorder:
    """Records the usage its runners report, for the runs this replica controls."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        plugins: PluginHost,
        *,
        instance: str,
        prices: Mapping[str, Price],
        clock: Callable[[], datetime],
    ) -> None:
        self.sessions = sessions
        self.plugins = plugins
        self.instance = instance
        self.prices = dict(prices)
        self.clock = clock
        self.unpriced = UnpricedModels()

    async def record(self, message: UsageMessage, epoch: int) -> Recorded | None:
        """Record the usage (once), under the run's fence; then tell plugins what it crossed."""
        async with self.sessions.begin() as session:
            run = await lock_run(session, message.run_id, instance=self.instance, epoch=epoch)
            recorded = await record_usage(
                session,
                run,
                Usage(
                    key=message.key,
                    turn=message.turn,
                    model=message.model,
                    input_tokens=message.input_tokens,
                    cached_input_tokens=message.cached_input_tokens,
                    output_tokens=message.output_tokens,
                    reasoning_tokens=message.reasoning_tokens,
                    cost_micros=message.cost_micros,
                    currency=message.currency,
                ),
                prices=self.prices,
                unpriced=self.unpriced,
                now=self.clock(),
            )
        if recorded is not None:
            for level, crossed in (
                ("warning", recorded.charged.warned),
                ("exceeded", recorded.charged.exceeded),
            ):
                for budget, row in crossed:
                    self._alert(level, budget, row)
        return recorded

    def _alert(self, level: str, budget: Budget, row: BudgetMonth) -> None:
        try:
            self.plugins.budget_alert(
                BudgetAlert(
                    level=level,  # type: ignore[arg-type]
                    company_id=str(budget.company_id),
                    budget_id=str(budget.id),
                    scope=budget.scope,  # type: ignore[arg-type]
                    scope_id=str(budget.scope_id),
                    month=row.month,
                    limit_micros=budget.monthly_limit_micros,
                    spent_micros=row.spent_micros,
                    warn_percent=budget.warn_percent,
                    currency=budget.currency,
                )
            )
        except Exception:
            # A plugin's failure to tell people never undoes what was recorded.
            log.exception("a budget alert plugin failed")
