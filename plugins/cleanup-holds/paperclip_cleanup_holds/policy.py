"""No-replay holds a quarantined close left on a completed turn settle once their controller is gone.

Candidates are the active system no-replay holds of runs that failed with
``native_session_cleanup_quarantined`` after their turn completed (the
control plane lists them; an operator's hold, or a run whose turn did not
complete, is never listed). A hold that protects files not verified as saved
is left for workspace recovery: its owner is never "proven gone" here. For
the others the proof is the closing controller's: its boot retired (the
cleanup gate lived in that process), or a hold of the earlier shape. Settling
resolves the hold as ``restored``, lifts its replay block and logs
``issue.recovery_action_resolved``, once; no run is started.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from paperclip_hookspecs.recovery import (
    CleanupHold,
    OwnerProof,
    RecoveryCandidate,
    RecoveryPort,
    Settlement,
    SettlementOutcome,
)
from paperclip_recovery_kit import PortPolicy

NAME = "native_completed_turn_cleanup_hold"


@dataclass(frozen=True, slots=True)
class CompletedTurnCleanupHolds(PortPolicy):
    """The ``native_completed_turn_cleanup_hold`` policy (port of hook API 1.5)."""

    name: str = NAME
    hook_api = "1.5"

    async def pending(self, port: RecoveryPort, limit: int) -> Sequence[CleanupHold]:
        return await port.cleanup_holds(limit)

    def to_candidate(self, item: Any) -> RecoveryCandidate:
        facts = {"shape": item.shape, "unsaved_files": item.protects_unsaved_files}
        return self.candidate(item, item.hold_id, item.closing, facts)

    async def prove(self, port: RecoveryPort, candidate: RecoveryCandidate) -> OwnerProof:
        if candidate.facts.get("unsaved_files"):
            return OwnerProof(False, "it protects files not verified as saved: workspace recovery")
        return await port.prove_closing_controller_gone(candidate.key)

    async def settle_with(
        self, port: RecoveryPort, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        if await port.settle_cleanup_hold(candidate.key, settlement=candidate.key):
            return Settlement(SettlementOutcome.SETTLED, "restored")
        return Settlement(SettlementOutcome.KEPT, "settled or resolved before")
