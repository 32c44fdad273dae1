"""The decision for one tool input without a saved result (``paperclip_recover_tool_input``).

A durable receipt is replayed first. Otherwise a callback an earlier
controller admitted, that this process does not run and did not see fail,
whose owner is proven gone, settles as ``tool_call_interrupted_by_restart``:
outcome unknown, not retryable; the model is told to check the current
state before it repeats the action. A ``semantic_tool_outcome_unknown``
answer of the tool's authority settles the same way, under the same proof.
The tool is never run again. A core tool whose effect commits with its
result is left to the core's own rule (it provably had no effect).
"""

from __future__ import annotations

from paperclip_hookspecs.receipts import (
    SEMANTIC_TOOL_OUTCOME_UNKNOWN,
    Admission,
    PendingToolInput,
    ToolRecovery,
)


def decide(pending: PendingToolInput) -> ToolRecovery | None:
    """The policy's answer, or None to leave the input to the core's rule."""
    if pending.receipt is not None:
        return ToolRecovery.replay(pending.receipt)
    if pending.effect_in_journal:
        return None  # the core's rule: no result means no effect (docs/decisions)
    if pending.running_here:
        return ToolRecovery.keep_pending("this process still runs it; its own result settles it")
    if pending.failed_here:
        return ToolRecovery.keep_pending("this controller dispatched it and saw it fail")
    if pending.admission is Admission.THIS_CONTROLLER:
        return ToolRecovery.keep_pending("admitted by this controller, which is alive")
    if not pending.owner_gone:
        return ToolRecovery.keep_pending("the earlier controller is not proven gone")
    if pending.authority_answer == SEMANTIC_TOOL_OUTCOME_UNKNOWN:
        return ToolRecovery.interrupted("the tool's authority cannot tell whether it took effect")
    return ToolRecovery.interrupted("admitted by an earlier controller that is gone; no receipt")
