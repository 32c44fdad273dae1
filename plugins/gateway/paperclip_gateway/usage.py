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

from collections.abc import Mapping
from typing import Any

from paperclip_provider_kit.reports import UsageReports, split_usage

__all__ = ["UsageReports", "run_usage"]


def run_usage(final: Mapping[str, Any], run_id: str) -> Any:
    """The :class:`TurnUsage` of a gateway run's final answer, or None if it carries none."""
    result = final.get("result")
    meta = result.get("meta") if isinstance(result, Mapping) else None
    agent = meta.get("agentMeta") if isinstance(meta, Mapping) else None
    usage = agent.get("usage") if isinstance(agent, Mapping) else None
    if not isinstance(usage, Mapping):
        return None
    assert isinstance(agent, Mapping)
    return split_usage(str(final.get("runId") or run_id), str(agent.get("model") or ""), usage)
