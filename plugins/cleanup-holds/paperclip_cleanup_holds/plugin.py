"""Registers the ``native_completed_turn_cleanup_hold`` recovery policy."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.recovery import RecoveryPolicy

from paperclip_cleanup_holds.policy import CompletedTurnCleanupHolds


@hookimpl
def paperclip_recovery_policies() -> list[RecoveryPolicy]:
    return [CompletedTurnCleanupHolds()]
