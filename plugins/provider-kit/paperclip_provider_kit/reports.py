"""Reporting what a turn used to the runner, once per model response, for every provider.

A provider reads its CLI's own usage shape into a
:class:`~paperclip_hookspecs.usage.TurnUsage` (hook API 1.8) with a key that is
the same when the same response is read again; :class:`UsageReports` sends
each key once. On an older hook API there is nothing to report to, and
:data:`TurnUsage` is None.
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


def count(value: Any) -> int:
    """A token count: a positive int, else 0 (a missing, negative or mistyped count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def cost_micros(dollars: Any) -> int | None:
    """A CLI's own cost in dollars as micro-dollars; None when it has no price (0 or absent)."""
    if isinstance(dollars, bool) or not isinstance(dollars, (int, float)) or dollars <= 0:
        return None
    return round(dollars * 1_000_000)


def split_usage(key: str, model: str, usage: Mapping[str, Any]) -> Any:
    """The TurnUsage of a usage that counts input without its cached tokens (``cacheRead``,
    ``cacheWrite``) and output with its reasoning ones (``reasoningTokens`` where counted
    apart), its cost in dollars at ``cost.total`` (Pi's shape, and an OpenClaw gateway's)."""
    if TurnUsage is None:
        return None
    read, write = count(usage.get("cacheRead")), count(usage.get("cacheWrite"))
    cost = usage.get("cost")
    return TurnUsage(
        key=key,
        model=model,
        input_tokens=count(usage.get("input")) + read + write,
        cached_input_tokens=read,
        output_tokens=count(usage.get("output")),
        reasoning_tokens=count(usage.get("reasoningTokens")),
        cost_micros=cost_micros(cost.get("total") if isinstance(cost, Mapping) else None),
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
