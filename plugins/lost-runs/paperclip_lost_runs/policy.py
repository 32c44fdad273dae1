"""A run whose turn was lost with its runner or provider process goes on in a new turn.

Candidates are the active runs the control plane reports lost: their runner
came back without them, no runner reported for them within their grace
period, their provider process died, or their queued next turn waited too
long for a runner. The earlier owner is proven gone by taking the run over
(the lease expired, and the epoch fence moves). Settling it queues the next
turn, resuming the provider session (a restart continuation) or starting a
fresh one, or, when the run's resumptions are spent, fails it and holds its
task with the reason. The control plane records each settlement once.
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

NAME = "lost_runs"


def _port(ctx: RecoveryContext) -> RecoveryPort:
    if ctx.port is None:
        raise RuntimeError("the reconciler gave no control-plane port (hook API 1.3 needed)")
    return ctx.port


@dataclass(frozen=True, slots=True)
class LostRunsPolicy:
    name: str = NAME

    async def list_candidates(
        self, ctx: RecoveryContext, limit: int
    ) -> Sequence[RecoveryCandidate]:
        return [
            RecoveryCandidate(
                kind=self.name,
                # One loss of one turn: the next loss of the run (another turn) is another.
                key=f"{run.run_id}:{run.turn}",
                company_id=run.company_id,
                issue_id=run.issue_id,
                run_id=run.run_id,
                owner=run.owner,
                facts={"reason": run.reason, "turn": run.turn},
            )
            for run in await _port(ctx).lost_runs(limit)
        ]

    async def prove_owner_gone(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate
    ) -> OwnerProof:
        assert candidate.run_id is not None
        return await _port(ctx).take_over_run(candidate.run_id)

    async def settle(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        assert candidate.run_id is not None and proof.epoch is not None
        outcome = await _port(ctx).resume_run(
            candidate.run_id, epoch=proof.epoch, settlement=candidate.key
        )
        if outcome.outcome == "already_settled":
            return Settlement(SettlementOutcome.KEPT, f"already settled: {outcome.detail}")
        return Settlement(SettlementOutcome.SETTLED, outcome.outcome)
