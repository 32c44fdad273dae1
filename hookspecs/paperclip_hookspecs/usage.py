"""What a turn cost: the usage a provider reports, as a driver hands it to the runner (hook API 1.8).

A driver reads its provider's own usage events (Codex's token-usage
notifications, OpenCode's message tokens and cost, Pi's message usage) and
calls :attr:`paperclip_hookspecs.providers.DriverContext.report_usage` with
one :class:`TurnUsage` per model response, as soon as the provider reports
it. The control plane records each once (its ``key`` is unique in the run: a
report sent again after a restart counts once), prices it, and holds it
against the budgets of the run's company, agent and project.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_USAGE_KEY = 200


@dataclass(frozen=True, slots=True)
class TurnUsage:
    """The tokens one model response used, as the provider reported them."""

    key: str
    """What this usage is of, in the provider's own ids (a response, a message): unique in
    the run, at most ``MAX_USAGE_KEY`` characters. The same key again is the same usage."""
    model: str = ""
    """The model that answered, as the provider names it (prices are looked up by it)."""
    input_tokens: int = 0
    """Every input token, cached ones included."""
    cached_input_tokens: int = 0
    """Input tokens read from the provider's cache (priced apart)."""
    output_tokens: int = 0
    """Every output token, reasoning ones included."""
    reasoning_tokens: int = 0
    """Output tokens spent on reasoning (informative: already in ``output_tokens``)."""
    cost_micros: int | None = None
    """What the provider says it cost, in millionths of ``currency``; None: it did not say
    (the control plane prices it from its price table). A provider's own cost wins."""
    currency: str = "USD"
