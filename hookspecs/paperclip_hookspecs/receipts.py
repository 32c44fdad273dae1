"""Tool recovery receipts: what becomes of a tool call that has no saved result.

The model calls a server-owned tool; the call is journaled as a semantic input
(admitted by a controller) before it is dispatched, and its result is journaled
before it is returned. A restart can leave an input admitted but without a
result. The reconciler then asks ``paperclip_recover_tool_input`` what to do
with it, and does exactly that, once:

- replay the tool's durable receipt (the effect happened; its proof is saved);
- settle it as ``tool_call_interrupted_by_restart``: outcome unknown, not
  retryable, the model is told to check state before repeating it;
- keep it pending (this process still runs it, or its owner is not proven gone).

- run it now (``redispatch``, hook API 1.2), when its effect commits with its
  result, so that an input without a result provably had no effect.

A tool whose effect may have happened is never run again. The core ships that
rule as a built-in plugin registered with ``trylast=True``; a plugin that can
find a receipt the core cannot (an external system's record of the effect)
answers first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from paperclip_hookspecs._markers import hookspec

TOOL_CALL_INTERRUPTED_BY_RESTART = "tool_call_interrupted_by_restart"
"""Error code of a tool result settled after a restart with an unknown outcome."""
SEMANTIC_TOOL_OUTCOME_UNKNOWN = "semantic_tool_outcome_unknown"
"""The tool authority's answer when it cannot tell whether the effect happened."""


class Admission(StrEnum):
    """Which controller admitted a semantic input."""

    THIS_CONTROLLER = "this_controller"
    """This process dispatched it live."""
    EARLIER_CONTROLLER = "earlier_controller"
    """Restored from an earlier controller's journal."""


class ReceiptStatus(StrEnum):
    """A write tool's idempotent receipt."""

    APPLIED = "applied"
    DUPLICATE = "duplicate"
    """The same command was applied before; nothing changed this time."""


@dataclass(frozen=True, slots=True)
class ToolReceipt:
    """The durable proof that a write tool's effect happened. Replayed, never re-executed."""

    command_id: str
    status: ReceiptStatus
    result: Mapping[str, Any] = field(default_factory=dict)
    """The tool result to return to the model, as the tool first produced it."""
    state_revision: str | None = None
    """The revision of the state the effect produced, when the tool keeps one."""


@dataclass(frozen=True, slots=True)
class PendingToolInput:
    """A journaled semantic input that has no saved result."""

    run_id: str
    input_id: str
    tool_name: str
    admission: Admission
    running_here: bool
    """This process still runs the callback: its own result will settle it."""
    owner_gone: bool
    """The admitting controller is provably gone (lease expired, epoch fence moved)."""
    receipt: ToolReceipt | None = None
    """The durable receipt the core found for the input, if any."""
    failed_here: bool = False
    """This controller dispatched it and saw the dispatch fail."""
    authority_answer: str | None = None
    """What the tool authority said when asked to recover it, e.g.
    ``semantic_tool_outcome_unknown``; None when it was not asked or had nothing to say."""
    effect_in_journal: bool = False
    """The tool's effect commits in the same transaction as its saved result (hook API
    1.2), so an input without a result provably had no effect."""


class ToolRecoveryAction(StrEnum):
    REPLAY_RECEIPT = "replay_receipt"
    SETTLE_INTERRUPTED = "settle_interrupted"
    KEEP_PENDING = "keep_pending"
    REDISPATCH = "redispatch"
    """Run the input now (hook API 1.2): only for an input that provably had no effect
    (``effect_in_journal`` and its owner gone)."""


@dataclass(frozen=True, slots=True)
class ToolRecovery:
    """The decision for one pending tool input. Build it with the class methods."""

    action: ToolRecoveryAction
    reason: str
    receipt: ToolReceipt | None = None
    """The receipt to replay (``REPLAY_RECEIPT`` only)."""
    error_code: str | None = None
    """The error code of the settled result (``SETTLE_INTERRUPTED`` only)."""
    retryable: bool = False

    @classmethod
    def replay(cls, receipt: ToolReceipt) -> ToolRecovery:
        """Return the receipt's result to the model as the tool's result."""
        return cls(ToolRecoveryAction.REPLAY_RECEIPT, "durable receipt", receipt=receipt)

    @classmethod
    def interrupted(cls, reason: str) -> ToolRecovery:
        """Settle as ``tool_call_interrupted_by_restart``: outcome unknown, not retryable."""
        return cls(
            ToolRecoveryAction.SETTLE_INTERRUPTED,
            reason,
            error_code=TOOL_CALL_INTERRUPTED_BY_RESTART,
        )

    @classmethod
    def keep_pending(cls, reason: str) -> ToolRecovery:
        """Leave the input pending; a later pass asks again."""
        return cls(ToolRecoveryAction.KEEP_PENDING, reason)

    @classmethod
    def redispatch(cls, reason: str) -> ToolRecovery:
        """Run the input now: it provably had no effect (hook API 1.2)."""
        return cls(ToolRecoveryAction.REDISPATCH, reason)


@hookspec(firstresult=True)
def paperclip_recover_tool_input(pending: PendingToolInput) -> ToolRecovery | None:
    """Decide what becomes of a tool input that has no saved result.

    Return a :class:`ToolRecovery`, or ``None`` to leave the decision to the
    next plugin (in the end, the built-in rule: replay a receipt; keep pending
    what this process runs or dispatched itself; settle as interrupted what an
    earlier, provably gone controller admitted; keep pending the rest). Never
    run the tool: an unknown outcome is a valid, reported outcome.
    """
