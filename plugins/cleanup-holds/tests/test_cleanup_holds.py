"""The ``native_completed_turn_cleanup_hold`` policy alone, against a scripted control-plane port."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from paperclip_cleanup_holds import plugin
from paperclip_cleanup_holds.policy import CompletedTurnCleanupHolds
from paperclip_hookspecs.recovery import (
    CleanupHold,
    OwnerProof,
    OwnerRef,
    RecoveryContext,
    RecoveryPolicy,
    SettlementOutcome,
)


@dataclass
class ScriptedPort:
    holds: list[CleanupHold]
    proofs: dict[str, OwnerProof]
    settled: set[str] = field(default_factory=set)
    asked: list[str] = field(default_factory=list)

    async def cleanup_holds(self, limit: int) -> Sequence[CleanupHold]:
        return [h for h in self.holds if h.hold_id not in self.settled][:limit]

    async def prove_closing_controller_gone(self, hold_id: str) -> OwnerProof:
        self.asked.append(hold_id)
        return self.proofs[hold_id]

    async def settle_cleanup_hold(self, hold_id: str, *, settlement: str) -> bool:
        if settlement in self.settled:
            return False
        self.settled.add(settlement)
        return True


def hold(hold_id: str, *, unsaved: bool = False, shape: str = "v2") -> CleanupHold:
    return CleanupHold(
        hold_id=hold_id,
        company_id="co",
        issue_id="is",
        run_id="run",
        closing=OwnerRef("replica-0", 2),
        protects_unsaved_files=unsaved,
        shape=shape,
    )


def context(port: ScriptedPort) -> RecoveryContext:
    return RecoveryContext(instance_id="replica-1", now=datetime.now(UTC), port=port)  # type: ignore[arg-type]


async def test_a_hold_settles_once_its_closing_controller_is_gone():
    port = ScriptedPort([hold("h1")], {"h1": OwnerProof(True, "boot retired")})
    policy = CompletedTurnCleanupHolds()
    assert (
        isinstance(policy, RecoveryPolicy) and policy.name == "native_completed_turn_cleanup_hold"
    )
    [candidate] = await policy.list_candidates(context(port), 10)
    assert candidate.key == "h1" and candidate.owner == OwnerRef("replica-0", 2)
    proof = await policy.prove_owner_gone(context(port), candidate)
    assert proof.gone
    assert (
        await policy.settle(context(port), candidate, proof)
    ).outcome is SettlementOutcome.SETTLED
    assert (await policy.settle(context(port), candidate, proof)).outcome is SettlementOutcome.KEPT
    assert await policy.list_candidates(context(port), 10) == []


async def test_a_hold_of_a_live_controller_is_not_proven_gone():
    port = ScriptedPort([hold("h1")], {"h1": OwnerProof(False, "alive")})
    policy = CompletedTurnCleanupHolds()
    [candidate] = await policy.list_candidates(context(port), 10)
    assert not (await policy.prove_owner_gone(context(port), candidate)).gone


async def test_a_hold_protecting_unsaved_files_is_left_to_workspace_recovery():
    port = ScriptedPort([hold("h1", unsaved=True)], {})
    policy = CompletedTurnCleanupHolds()
    [candidate] = await policy.list_candidates(context(port), 10)
    proof = await policy.prove_owner_gone(context(port), candidate)
    assert not proof.gone and "files" in proof.reason and port.asked == []


def test_the_plugin_registers_the_policy():
    assert [p.name for p in plugin.paperclip_recovery_policies()] == [
        "native_completed_turn_cleanup_hold"
    ]
