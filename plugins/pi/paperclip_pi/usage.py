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

from collections.abc import Mapping
from typing import Any

from paperclip_provider_kit.reports import UsageReports, split_usage

__all__ = ["UsageReports", "message_usage"]


def message_usage(message: Any) -> Any:
    """The :class:`TurnUsage` of an assistant message at its ``message_end``, or None."""
    if not isinstance(message, Mapping):
        return None
    usage = message.get("usage")
    if message.get("role") != "assistant" or not isinstance(usage, Mapping):
        return None
    key = f"{message.get('timestamp')}:{message.get('responseId') or ''}"
    return split_usage(key, str(message.get("model") or ""), usage)
