"""Built-in tool recovery rule: replay a receipt, run again what provably had no effect, else wait.

It never settles an input whose effect may have happened: that is the
orphaned-callback policy's decision (``paperclip-orphaned-callbacks``), which
answers first when installed. Without it, such an input stays pending.
"""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.receipts import PendingToolInput, ToolRecovery


@hookimpl(trylast=True)
def paperclip_recover_tool_input(pending: PendingToolInput) -> ToolRecovery:
    """The receipt first; a core tool of a gone owner runs again; everything else waits."""
    if pending.receipt is not None:
        return ToolRecovery.replay(pending.receipt)
    if pending.running_here:
        return ToolRecovery.keep_pending("this process still runs it; its own result settles it")
    if pending.effect_in_journal and pending.owner_gone:
        # A core tool's effect commits with its result: without a result it had none,
        # so running it now cannot repeat anything (docs/decisions/0001-core-tool-recovery.md).
        return ToolRecovery.redispatch("its effect commits with its result: it had none")
    return ToolRecovery.keep_pending("its effect may have happened and no policy settles it")
