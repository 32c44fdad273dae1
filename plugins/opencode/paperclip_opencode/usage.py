"""What an OpenCode turn used: each assistant message's ``tokens`` and ``cost``.

OpenCode (1.18.33) makes one assistant message per model response and sends
``message.updated`` for it as it goes; once ``info.time.completed`` is set its
``tokens`` and ``cost`` are final (it sends that update twice). OpenCode counts
``tokens.input`` without the cached tokens (``tokens.cache.read``, and
``cache.write`` where a provider reports writes) and ``tokens.output`` without
the reasoning ones (``tokens.reasoning``): the report adds them back, as
:class:`~paperclip_hookspecs.usage.TurnUsage` counts. ``cost`` is OpenCode's
own, in dollars, from its model table; 0 (a model it has no price for, as an
agent's own endpoint is) is not a cost, and the control plane prices the
tokens. The key is the message id.
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


def message_usage(info: Any) -> Any:
    """The :class:`TurnUsage` of a completed assistant message, or None (not one, not yet)."""
    if TurnUsage is None or not isinstance(info, Mapping) or info.get("role") != "assistant":
        return None
    time, tokens = info.get("time"), info.get("tokens")
    if not isinstance(time, Mapping) or not isinstance(time.get("completed"), (int, float)):
        return None
    if not isinstance(info.get("id"), str) or not isinstance(tokens, Mapping):
        return None
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), Mapping) else {}
    read, write = _count(cache.get("read")), _count(cache.get("write"))
    reasoning = _count(tokens.get("reasoning"))
    cost = info.get("cost")
    dollars = cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0
    return TurnUsage(
        key=str(info["id"]),
        model=str(info.get("modelID") or ""),
        input_tokens=_count(tokens.get("input")) + read + write,
        cached_input_tokens=read,
        output_tokens=_count(tokens.get("output")) + reasoning,
        reasoning_tokens=reasoning,
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
