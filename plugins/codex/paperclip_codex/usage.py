"""What a Codex turn used: its ``thread/tokenUsage/updated`` notifications, one per model response.

Codex (codex-cli 0.171.0) sends one after each model response of a turn:
``tokenUsage.last`` is that response's usage, counted as
:class:`~paperclip_hookspecs.usage.TurnUsage` counts (input tokens with the
cached ones, output tokens with the reasoning ones), ``tokenUsage.total`` the
thread's running sum. A resumed thread gets its latest one again, with the
earlier turn's id: only the running turn's are reported, so a response is
counted by the run whose turn it was, never again by the run that resumes its
thread. Codex reports no cost: the control plane prices the tokens.

The key is the turn id and the thread's running total: unique per response
within the thread, and the same for the same response read again.
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

METHOD = "thread/tokenUsage/updated"
REMEMBERED = 4096
"""Keys of reported responses kept per driver, to report each once (bounded, oldest out)."""


def turn_usage(payload: Mapping[str, Any], model: str | None) -> Any:
    """The :class:`TurnUsage` of a ``thread/tokenUsage/updated``, or None if it has none."""
    usage = payload.get("tokenUsage")
    last = usage.get("last") if isinstance(usage, Mapping) else None
    total = usage.get("total") if isinstance(usage, Mapping) else None
    turn_id = payload.get("turnId")
    if TurnUsage is None or not isinstance(last, Mapping) or not isinstance(turn_id, str):
        return None
    running = total.get("totalTokens") if isinstance(total, Mapping) else None
    return TurnUsage(
        key=f"{turn_id}:{_count(running)}",
        model=model or "",
        input_tokens=_count(last.get("inputTokens")),
        cached_input_tokens=_count(last.get("cachedInputTokens")),
        output_tokens=_count(last.get("outputTokens")),
        reasoning_tokens=_count(last.get("reasoningOutputTokens")),
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
