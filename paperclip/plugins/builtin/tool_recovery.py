"""Built-in tool recovery rule: replay a receipt, settle an orphan as interrupted, never re-run."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.receipts import (
    SEMANTIC_TOOL_OUTCOME_UNKNOWN,
    Admission,
    PendingToolInput,
    ToolRecovery,
)


@hookimpl(trylast=True)
def paperclip_recover_tool_input(pending: PendingToolInput) -> ToolRecovery:
    """The receipt first; then only an earlier controller's input, its owner proven gone, settles."""
    if pending.receipt is not None:
        return ToolRecovery.replay(pending.receipt)
    if pending.running_here:
        return ToolRecovery.keep_pending("this process still runs it; its own result settles it")
    if pending.effect_in_journal and pending.owner_gone:
        # A core tool's effect commits with its result: without a result it had none,
        # so running it now cannot repeat anything.
        return ToolRecovery.redispatch("its effect commits with its result: it had none")
    if pending.admission is Admission.THIS_CONTROLLER:
        # Dispatched here and not running: its dispatch failed or its result is on the
        # way. Recovery has no authority over a live controller's input.
        return ToolRecovery.keep_pending("admitted by this controller")
    if not pending.owner_gone:
        return ToolRecovery.keep_pending("the earlier controller is not proven gone")
    if pending.authority_answer == SEMANTIC_TOOL_OUTCOME_UNKNOWN:
        return ToolRecovery.interrupted("the tool authority cannot tell whether it took effect")
    return ToolRecovery.interrupted("admitted by an earlier controller that is gone, no receipt")
