"""What a gateway run used: the usage in the ``agent`` request's final answer.

An OpenClaw gateway (2026.9.6) reports a run's usage in the final answer of
its ``agent`` request, summed over the run's model calls:
``result.meta.agentMeta.usage`` (``input`` without the cached tokens, which
are ``cacheRead``, and ``cacheWrite``; ``output`` with the reasoning tokens,
which are ``reasoningTokens`` when there are any; ``cost.total``, the
gateway's own cost in dollars, 0 for a model it has no price for) and
``agentMeta.model``. Its events say less: ``agent`` events of stream ``usage``
carry only the run's output tokens so far, and ``agent.wait`` answers with no
usage at all. So a gateway run reports one usage, when its final answer
arrives, keyed by the gateway run's id (the Paperclip run's, or a
follow-up's); a run whose end was learned through ``agent.wait`` (after a lost
connection) reports none.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from paperclip_hookspecs.providers import DriverContext

try:
    from paperclip_hookspecs.usage import TurnUsage
except ImportError:  # a hook API before 1.8: there is nothing to report to
    TurnUsage = None  # type: ignore[assignment, misc, unused-ignore]

logger = logging.getLogger(__name__)

REMEMBERED = 4096
"""Keys of reported runs kept per driver, to report each once (bounded, oldest out)."""


def run_usage(final: Mapping[str, Any], run_id: str) -> Any:
    """The :class:`TurnUsage` of a gateway run's final answer, or None if it carries none."""
    result = final.get("result")
    meta = result.get("meta") if isinstance(result, Mapping) else None
    agent = meta.get("agentMeta") if isinstance(meta, Mapping) else None
    usage = agent.get("usage") if isinstance(agent, Mapping) else None
    if TurnUsage is None or not isinstance(usage, Mapping):
        return None
    assert isinstance(agent, Mapping)
    read, write = _count(usage.get("cacheRead")), _count(usage.get("cacheWrite"))
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, Mapping) else None
    dollars = total if isinstance(total, (int, float)) and not isinstance(total, bool) else 0
    return TurnUsage(
        key=str(final.get("runId") or run_id),
        model=str(agent.get("model") or ""),
        input_tokens=_count(usage.get("input")) + read + write,
        cached_input_tokens=read,
        output_tokens=_count(usage.get("output")),
        reasoning_tokens=_count(usage.get("reasoningTokens")),
        cost_micros=round(dollars * 1_000_000) if dollars > 0 else None,
    )


class UsageReports:
    """Hands each gateway run's usage to the runner once (``DriverContext.report_usage``)."""

    def __init__(self, context: DriverContext) -> None:
        # A runner of a hook API before 1.8 has no report_usage: nothing is reported.
        self._report = getattr(context, "report_usage", None)
        self._sent: OrderedDict[str, None] = OrderedDict()

    async def send(self, usage: Any) -> None:
        """Report ``usage`` (a TurnUsage) unless it is empty or this driver reported its key."""
        if usage is None or self._report is None or usage.key in self._sent:
            return
        if not (usage.input_tokens or usage.output_tokens or usage.cost_micros):
            return  # a run that used nothing (refused, or aborted before it began)
        self._sent[usage.key] = None
        while len(self._sent) > REMEMBERED:
            self._sent.popitem(last=False)
        try:
            await self._report(usage)
        except Exception:  # a report that cannot be sent must not fail the turn
            logger.warning("the usage of %s could not be reported", usage.key, exc_info=True)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
