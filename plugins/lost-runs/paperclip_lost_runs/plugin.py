"""Registers the ``lost_runs`` recovery policy."""

from __future__ import annotations

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.recovery import RecoveryPolicy

from paperclip_lost_runs.policy import LostRunsPolicy


@hookimpl
def paperclip_recovery_policies() -> list[RecoveryPolicy]:
    return [LostRunsPolicy()]
