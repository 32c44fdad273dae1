"""The fake app-server's token usage, sent as codex-cli 0.171.0 sends it.

After each model response of a turn, once the response's items are done,
Codex sends ``thread/tokenUsage/updated`` ``{threadId, turnId, tokenUsage:
{total, last, modelContextWindow}}``: ``last`` is the response's own usage,
``total`` the thread's running sum, kept across processes as the rollout
keeps it. When a thread is resumed, Codex sends the thread's latest one again
(with that earlier turn's id) before the next turn starts.

A model step's ``usage`` option sets a response's numbers (``input_tokens``,
``cached_input_tokens``, ``output_tokens``, ``reasoning_tokens``, in OpenAI's
accounting: cached within input, reasoning within output); without it, the
thread's n-th response reports the usage of its place, derived as
:mod:`paperclip_provider_kit.usage` derives it for the other fakes (this fake
needs nothing installed, so it carries the same few lines).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")
CONTEXT_WINDOW = 258_400
"""What Codex reports for a model it knows nothing about (a scripted one)."""


def check_option(option: Any) -> str | None:
    """Why a step's ``usage`` option is not a usage, or None."""
    if not isinstance(option, Mapping) or set(option) - set(COUNTS):
        return f"usage is an object of {list(COUNTS)}: {option!r}"
    counts = {key: option.get(key, 0) for key in COUNTS}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
        return f"usage counts are integers >= 0: {option!r}"
    if counts["cached_input_tokens"] > counts["input_tokens"]:
        return "usage: cached_input_tokens must be within input_tokens"
    if counts["reasoning_tokens"] > counts["output_tokens"]:
        return "usage: reasoning_tokens must be within output_tokens"
    return None


def scripted(index: int, option: Mapping[str, Any] | None) -> dict[str, int]:
    """The ``index``-th response's counts: the step's option, else derived from ``index``."""
    if option is not None:
        return {key: int(option.get(key, 0)) for key in COUNTS}
    return {
        "input_tokens": 1000 + 150 * index,
        "cached_input_tokens": 100 * index,
        "output_tokens": 20 + 10 * index,
        "reasoning_tokens": 2 + index,
    }


def breakdown(counts: Mapping[str, int]) -> dict[str, int]:
    """Counts as Codex's ``TokenUsageBreakdown``."""
    return {
        "totalTokens": counts["input_tokens"] + counts["output_tokens"],
        "inputTokens": counts["input_tokens"],
        "cachedInputTokens": counts["cached_input_tokens"],
        "cacheWriteInputTokens": 0,
        "outputTokens": counts["output_tokens"],
        "reasoningOutputTokens": counts["reasoning_tokens"],
    }


@dataclass(slots=True)
class ThreadUsage:
    """A thread's usage so far: its responses, their sum, and the latest notification's turn."""

    responses: int = 0
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    last: dict[str, int] | None = None
    turn_id: str | None = None

    def add(self, turn_id: str, option: Mapping[str, Any] | None) -> dict[str, int]:
        """Count the thread's next response (in ``turn_id``); its counts."""
        counts = scripted(self.responses, option)
        self.responses += 1
        self.total = {key: self.total[key] + counts[key] for key in COUNTS}
        self.last, self.turn_id = counts, turn_id
        return counts

    def notification(self, thread_id: str) -> dict[str, Any] | None:
        """``thread/tokenUsage/updated``'s params for the latest response, or None."""
        if self.last is None or self.turn_id is None:
            return None
        return {
            "threadId": thread_id,
            "turnId": self.turn_id,
            "tokenUsage": {
                "total": breakdown(self.total),
                "last": breakdown(self.last),
                "modelContextWindow": CONTEXT_WINDOW,
            },
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "responses": self.responses,
            "total": self.total,
            "last": self.last,
            "turnId": self.turn_id,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ThreadUsage:
        if not data:
            return cls()
        return cls(
            responses=int(data["responses"]),
            total=dict(data["total"]),
            last=dict(data["last"]) if data.get("last") else None,
            turn_id=data.get("turnId"),
        )
