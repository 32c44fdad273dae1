"""The ``orphaned_tool_callbacks`` recovery policy: ask again about inputs an earlier controller left.

Adoption asks the tool-recovery hook once. An input kept then (this process
still ran it, say) must not wait for the next restart: each reconciler pass
lists the pending inputs an earlier controller admitted, of runs this
replica controls now. The proof that their owner is gone is the fence: the
run's epoch moved past the admission. Settling asks the hook again, through
the control plane, which saves what it answers; an input that stays pending
is kept and listed again on the next pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from paperclip_hookspecs.recovery import (
    OwnerProof,
    OwnerRef,
    PendingCallback,
    RecoveryCandidate,
    RecoveryPort,
    Settlement,
    SettlementOutcome,
)
from paperclip_recovery_kit import PortPolicy

NAME = "orphaned_tool_callbacks"


@dataclass(frozen=True, slots=True)
class OrphanedCallbacksPolicy(PortPolicy):
    """The ``orphaned_tool_callbacks`` policy (port of hook API 1.5)."""

    name: str = NAME
    hook_api = "1.5"

    async def pending(self, port: RecoveryPort, limit: int) -> Sequence[PendingCallback]:
        return await port.pending_callbacks(limit)

    def to_candidate(self, item: Any) -> RecoveryCandidate:
        owner = OwnerRef(item.admitted_by, item.admitted_epoch)
        facts = {"tool": item.tool_name, "epoch": item.epoch}
        return self.candidate(item, item.input_id, owner, facts)

    async def prove(self, port: RecoveryPort, candidate: RecoveryCandidate) -> OwnerProof:
        epoch = int(candidate.facts["epoch"])
        admitted = candidate.owner.epoch if candidate.owner is not None else epoch
        if admitted >= epoch:
            return OwnerProof(False, f"admitted at the run's current epoch {epoch}")
        return OwnerProof(True, f"the run's fence moved from epoch {admitted} to {epoch}", epoch)

    async def settle_with(
        self, port: RecoveryPort, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        assert candidate.run_id is not None and proof.epoch is not None
        done = await port.recover_callbacks(candidate.run_id, epoch=proof.epoch)
        if done.pending:
            return Settlement(SettlementOutcome.KEPT, f"{done.pending} input(s) still pending")
        return Settlement(SettlementOutcome.SETTLED, f"{done.settled} input(s) settled")
