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
from typing import Any

from paperclip_hookspecs.recovery import (
    LostRun,
    OwnerProof,
    RecoveryCandidate,
    RecoveryPort,
    Settlement,
    SettlementOutcome,
)
from paperclip_recovery_kit import PortPolicy

NAME = "lost_runs"


@dataclass(frozen=True, slots=True)
class LostRunsPolicy(PortPolicy):
    """The ``lost_runs`` policy (port of hook API 1.3)."""

    name: str = NAME

    async def pending(self, port: RecoveryPort, limit: int) -> Sequence[LostRun]:
        return await port.lost_runs(limit)

    def to_candidate(self, item: Any) -> RecoveryCandidate:
        # One loss of one turn: the next loss of the run (another turn) is another.
        key = f"{item.run_id}:{item.turn}"
        return self.candidate(item, key, item.owner, {"reason": item.reason, "turn": item.turn})

    async def prove(self, port: RecoveryPort, candidate: RecoveryCandidate) -> OwnerProof:
        assert candidate.run_id is not None
        return await port.take_over_run(candidate.run_id)

    async def settle_with(
        self, port: RecoveryPort, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        assert candidate.run_id is not None and proof.epoch is not None
        outcome = await port.resume_run(
            candidate.run_id, epoch=proof.epoch, settlement=candidate.key
        )
        if outcome.outcome == "already_settled":
            return Settlement(SettlementOutcome.KEPT, f"already settled: {outcome.detail}")
        return Settlement(SettlementOutcome.SETTLED, outcome.outcome)
