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

from collections.abc import Mapping
from typing import Any

from paperclip_provider_kit.reports import TurnUsage, UsageReports, cost_micros, count

__all__ = ["UsageReports", "message_usage"]


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
    read, write = count(cache.get("read")), count(cache.get("write"))
    reasoning = count(tokens.get("reasoning"))
    return TurnUsage(
        key=str(info["id"]),
        model=str(info.get("modelID") or ""),
        input_tokens=count(tokens.get("input")) + read + write,
        cached_input_tokens=read,
        output_tokens=count(tokens.get("output")) + reasoning,
        reasoning_tokens=reasoning,
        cost_micros=cost_micros(info.get("cost")),
    )
