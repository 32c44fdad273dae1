"""The ``lost_runs`` policy alone, against a scripted control-plane port."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperclip_hookspecs.recovery import (
    LostRun,
    OwnerProof,
    OwnerRef,
    RecoveryContext,
    RecoveryPolicy,
    ResumeOutcome,
    SettlementOutcome,
)
from paperclip_lost_runs import plugin
from paperclip_lost_runs.policy import LostRunsPolicy


@dataclass
class ScriptedPort:
    lost: list[LostRun]
    proofs: dict[str, OwnerProof]
    outcomes: dict[str, ResumeOutcome]
    resumed: list[tuple[str, int, str]] = field(default_factory=list)

    async def lost_runs(self, limit: int) -> Sequence[LostRun]:
        return self.lost[:limit]

    async def take_over_run(self, run_id: str) -> OwnerProof:
        return self.proofs[run_id]

    async def resume_run(self, run_id: str, *, epoch: int, settlement: str) -> ResumeOutcome:
        self.resumed.append((run_id, epoch, settlement))
        return self.outcomes[run_id]


def lost(run_id: str, turn: int = 1, reason: str = "runner_restarted") -> LostRun:
    return LostRun(run_id, "company-1", "issue-1", turn, reason, OwnerRef("cp-1", 1))


def context(port: ScriptedPort) -> RecoveryContext:
    return RecoveryContext(instance_id="cp-2", now=datetime.now(UTC), port=port)


async def test_paperclip_recovery_policies_registers_the_lost_runs_policy() -> None:
    [policy] = plugin.paperclip_recovery_policies()
    assert isinstance(policy, RecoveryPolicy)
    assert policy.name == "lost_runs"


async def test_a_candidate_is_one_loss_of_one_turn() -> None:
    port = ScriptedPort([lost("r1", 1), lost("r2", 3, "provider_exited")], {}, {})
    candidates = await LostRunsPolicy().list_candidates(context(port), 10)
    assert [(c.key, c.run_id, c.facts["reason"]) for c in candidates] == [
        ("r1:1", "r1", "runner_restarted"),
        ("r2:3", "r2", "provider_exited"),
    ]
    assert candidates[0].owner == OwnerRef("cp-1", 1)


async def test_settling_resumes_under_the_proven_epoch_and_names_the_candidate() -> None:
    port = ScriptedPort(
        [lost("r1")],
        {"r1": OwnerProof(True, "lease expired", epoch=4)},
        {"r1": ResumeOutcome("resuming")},
    )
    policy = LostRunsPolicy()
    [candidate] = await policy.list_candidates(context(port), 10)
    proof = await policy.prove_owner_gone(context(port), candidate)
    settlement = await policy.settle(context(port), candidate, proof)
    assert port.resumed == [("r1", 4, "r1:1")]
    assert (settlement.outcome, settlement.reason) == (SettlementOutcome.SETTLED, "resuming")


async def test_a_candidate_settled_elsewhere_is_kept_not_counted() -> None:
    port = ScriptedPort(
        [lost("r1")],
        {"r1": OwnerProof(True, "lease expired", epoch=2)},
        {"r1": ResumeOutcome("already_settled", "settled by another pass")},
    )
    policy = LostRunsPolicy()
    [candidate] = await policy.list_candidates(context(port), 10)
    settlement = await policy.settle(
        context(port), candidate, await policy.prove_owner_gone(context(port), candidate)
    )
    assert settlement.outcome is SettlementOutcome.KEPT
