"""What a Pi turn used: each assistant message's ``usage``, at its ``message_end``.

Pi (0.73.1) ends each model response's assistant message with ``message_end``,
whose message carries the response's ``usage`` (``input`` without the cached
tokens, which are ``cacheRead``, and ``cacheWrite`` where a provider reports
writes; ``output`` with the reasoning ones, which Pi does not count apart),
the ``model``, the model's ``responseId`` and the message's ``timestamp``.
``usage.cost.total`` is Pi's own cost in dollars, from its model table; 0 (a
model it has no price for, as an agent's own endpoint is) is not a cost, and
the control plane prices the tokens. The key is the message's timestamp and
response id: the same message read again has the same key.
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
"""Keys of reported responses kept per driver, to report each once (bounded, oldest out)."""


def message_usage(message: Any) -> Any:
    """The :class:`TurnUsage` of an assistant message at its ``message_end``, or None."""
    if TurnUsage is None or not isinstance(message, Mapping):
        return None
    usage = message.get("usage")
    if message.get("role") != "assistant" or not isinstance(usage, Mapping):
        return None
    read, write = _count(usage.get("cacheRead")), _count(usage.get("cacheWrite"))
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, Mapping) else None
    dollars = total if isinstance(total, (int, float)) and not isinstance(total, bool) else 0
    return TurnUsage(
        key=f"{message.get('timestamp')}:{message.get('responseId') or ''}",
        model=str(message.get("model") or ""),
        input_tokens=_count(usage.get("input")) + read + write,
        cached_input_tokens=read,
        output_tokens=_count(usage.get("output")),
        cost_micros=round(dollars * 1_000_000) if dollars > 0 else None,
    )


class UsageReports:
    """Hands each response's usage to the runner once (``DriverContext.report_usage``)."""

    def __init__(self, context: DriverContext) -> None:
        # A runner of a hook API before 1.8 has no report_usage: nothing is reported.
        self._report = getattr(context, "report_usage", None)
        self._sent: OrderedDict[str, None] = OrderedDict()

    async def send(self, usage: Any) -> None:
        """Report ``usage`` (a TurnUsage) unless it is empty or this driver reported its key."""
        if usage is None or self._report is None or usage.key in self._sent:
            return
        if not (usage.input_tokens or usage.output_tokens or usage.cost_micros):
            return  # a response that used nothing (refused, or aborted before it began)
        self._sent[usage.key] = None
        while len(self._sent) > REMEMBERED:
            self._sent.popitem(last=False)
        try:
            await self._report(usage)
        except Exception:  # a report that cannot be sent must not fail the turn
            logger.warning("the usage of %s could not be reported", usage.key, exc_info=True)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
