"""Registers the orphaned-callback rule and its recovery policy."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.receipts import PendingToolInput, ToolRecovery
from paperclip_hookspecs.recovery import RecoveryPolicy

from paperclip_orphaned_callbacks.policy import OrphanedCallbacksPolicy
from paperclip_orphaned_callbacks.rule import decide


@hookimpl
def paperclip_recover_tool_input(pending: PendingToolInput) -> ToolRecovery | None:
    return decide(pending)


@hookimpl
def paperclip_recovery_policies() -> list[RecoveryPolicy]:
    return [OrphanedCallbacksPolicy()]
