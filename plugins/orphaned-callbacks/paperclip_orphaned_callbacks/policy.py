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

from paperclip_hookspecs.recovery import (
    OwnerProof,
    OwnerRef,
    RecoveryCandidate,
    RecoveryContext,
    RecoveryPort,
    Settlement,
    SettlementOutcome,
)

NAME = "orphaned_tool_callbacks"


def _port(ctx: RecoveryContext) -> RecoveryPort:
    if ctx.port is None:
        raise RuntimeError("the reconciler gave no control-plane port (hook API 1.5 needed)")
    return ctx.port


@dataclass(frozen=True, slots=True)
class OrphanedCallbacksPolicy:
    name: str = NAME

    async def list_candidates(
        self, ctx: RecoveryContext, limit: int
    ) -> Sequence[RecoveryCandidate]:
        return [
            RecoveryCandidate(
                kind=self.name,
                key=callback.input_id,
                company_id=callback.company_id,
                run_id=callback.run_id,
                owner=OwnerRef(callback.admitted_by, callback.admitted_epoch),
                facts={"tool": callback.tool_name, "epoch": callback.epoch},
            )
            for callback in await _port(ctx).pending_callbacks(limit)
        ]

    async def prove_owner_gone(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate
    ) -> OwnerProof:
        epoch = int(candidate.facts["epoch"])
        admitted = candidate.owner.epoch if candidate.owner is not None else epoch
        if admitted >= epoch:
            return OwnerProof(False, f"admitted at the run's current epoch {epoch}")
        return OwnerProof(True, f"the run's fence moved from epoch {admitted} to {epoch}", epoch)

    async def settle(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        assert candidate.run_id is not None and proof.epoch is not None
        done = await _port(ctx).recover_callbacks(candidate.run_id, epoch=proof.epoch)
        if done.pending:
            return Settlement(SettlementOutcome.KEPT, f"{done.pending} input(s) still pending")
        return Settlement(SettlementOutcome.SETTLED, f"{done.settled} input(s) settled")
