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

from collections.abc import Mapping
from typing import Any

from paperclip_provider_kit.reports import TurnUsage, UsageReports, count

__all__ = ["METHOD", "UsageReports", "turn_usage"]

METHOD = "thread/tokenUsage/updated"


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
        key=f"{turn_id}:{count(running)}",
        model=model or "",
        input_tokens=count(last.get("inputTokens")),
        cached_input_tokens=count(last.get("cachedInputTokens")),
        output_tokens=count(last.get("outputTokens")),
        reasoning_tokens=count(last.get("reasoningOutputTokens")),
    )
