"""What a fake provider's scripted "model" says each of its responses used.

A fake's script may give a model step a ``usage`` option::

    {"message": "done", "usage": {"input_tokens": 1200, "cached_input_tokens": 300,
                                  "output_tokens": 40, "reasoning_tokens": 8, "cost": 0.0042}}

in OpenAI's accounting, as :class:`paperclip_hookspecs.usage.TurnUsage` counts
too: cached input tokens are part of the input tokens, reasoning tokens part
of the output tokens; ``cost`` is the provider's own, in dollars (a real CLI
with a model it has no price for says 0, and so does a fake by default). A
step without the option reports the usage of its place in the conversation
(:meth:`ScriptedUsage.for_response`): every count differs from one response
to the next, so a usage counted twice, or lost, shows in a sum. Each fake
turns it into its CLI's own shape (OpenCode and Pi count input without the
cached tokens, OpenCode output without reasoning) and logs what it sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")
OPTION_KEYS = frozenset({*COUNTS, "cost"})


class UsageError(ValueError):
    """A step's ``usage`` option is not a usage."""


@dataclass(frozen=True, slots=True)
class ScriptedUsage:
    """One response's usage, as a fake reports it."""

    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost: float = 0.0
    """Dollars, as OpenCode, Pi and OpenClaw report a cost (0: no price known)."""

    @classmethod
    def for_response(cls, index: int, option: Mapping[str, Any] | None = None) -> ScriptedUsage:
        """The ``index``-th response's usage (0-based, in its conversation): the step's
        ``usage`` option where it has one, else derived from ``index``."""
        if option is not None:
            check_option(option)
            counts = {key: int(option.get(key, 0)) for key in COUNTS}
            return cls(**counts, cost=float(option.get("cost", 0.0)))
        return cls(
            input_tokens=1000 + 150 * index,
            cached_input_tokens=100 * index,
            output_tokens=20 + 10 * index,
            reasoning_tokens=2 + index,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def log_entry(self, **ids: Any) -> dict[str, Any]:
        """What a fake logs of a response's usage: its ids, the counts and the cost."""
        return {"type": "usage", **ids, **asdict(self)}


def check_option(option: Any) -> None:
    """UsageError unless ``option`` is a valid ``usage`` step option."""
    if not isinstance(option, Mapping):
        raise UsageError(f"usage must be an object: {option!r}")
    unknown = set(option) - OPTION_KEYS
    if unknown:
        raise UsageError(f"unknown usage key(s) {sorted(unknown)}; known: {sorted(OPTION_KEYS)}")
    counts = {key: option.get(key, 0) for key in COUNTS}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
        raise UsageError(f"usage counts must be integers >= 0: {dict(option)!r}")
    if counts["cached_input_tokens"] > counts["input_tokens"]:
        raise UsageError("cached_input_tokens must be within input_tokens")
    if counts["reasoning_tokens"] > counts["output_tokens"]:
        raise UsageError("reasoning_tokens must be within output_tokens")
    cost = option.get("cost", 0.0)
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or cost < 0:
        raise UsageError(f"usage cost must be a number >= 0: {cost!r}")
