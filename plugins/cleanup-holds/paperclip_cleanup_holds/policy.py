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

from paperclip_hookspecs.recovery import (
    OwnerProof,
    RecoveryCandidate,
    RecoveryContext,
    RecoveryPort,
    Settlement,
    SettlementOutcome,
)

NAME = "native_completed_turn_cleanup_hold"


def _port(ctx: RecoveryContext) -> RecoveryPort:
    if ctx.port is None:
        raise RuntimeError("the reconciler gave no control-plane port (hook API 1.5 needed)")
    return ctx.port


@dataclass(frozen=True, slots=True)
class CompletedTurnCleanupHolds:
    name: str = NAME

    async def list_candidates(
        self, ctx: RecoveryContext, limit: int
    ) -> Sequence[RecoveryCandidate]:
        return [
            RecoveryCandidate(
                kind=self.name,
                key=hold.hold_id,
                company_id=hold.company_id,
                issue_id=hold.issue_id,
                run_id=hold.run_id,
                owner=hold.closing,
                facts={"shape": hold.shape, "unsaved_files": hold.protects_unsaved_files},
            )
            for hold in await _port(ctx).cleanup_holds(limit)
        ]

    async def prove_owner_gone(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate
    ) -> OwnerProof:
        if candidate.facts.get("unsaved_files"):
            return OwnerProof(False, "it protects files not verified as saved: workspace recovery")
        return await _port(ctx).prove_closing_controller_gone(candidate.key)

    async def settle(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        if await _port(ctx).settle_cleanup_hold(candidate.key, settlement=candidate.key):
            return Settlement(SettlementOutcome.SETTLED, "restored")
        return Settlement(SettlementOutcome.KEPT, "settled or resolved before")
