"""``paperclip_recovery_policies``: named policies whose async methods the reconciler drives."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.recovery import (
    OwnerProof,
    OwnerRef,
    RecoveryCandidate,
    RecoveryContext,
    RecoveryPolicy,
    Settlement,
    SettlementOutcome,
)

from paperclip.plugins import PluginConflictError, PluginHookError


@dataclass(frozen=True)
class CleanupHolds:
    """Settles holds whose closing controller's epoch has been fenced off."""

    holds: list[RecoveryCandidate]
    current_epoch: int
    settled: list[str] = field(default_factory=list)
    name: str = "native_completed_turn_cleanup_hold"

    async def list_candidates(self, ctx: RecoveryContext, limit: int) -> list[RecoveryCandidate]:
        return [h for h in self.holds if h.key not in self.settled][:limit]

    async def prove_owner_gone(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate
    ) -> OwnerProof:
        assert candidate.owner is not None
        if candidate.owner.epoch < self.current_epoch:
            return OwnerProof(gone=True, reason="epoch fence moved")
        return OwnerProof(gone=False, reason="the closing controller holds the current epoch")

    async def settle(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        self.settled.append(candidate.key)
        return Settlement(SettlementOutcome.SETTLED, "restored")


def hold(key: str, epoch: int) -> RecoveryCandidate:
    return RecoveryCandidate(
        kind="native_completed_turn_cleanup_hold",
        key=key,
        company_id="co-1",
        run_id="run-1",
        owner=OwnerRef(instance_id="old-replica", epoch=epoch),
    )


def policies_plugin(*policies: object) -> types.SimpleNamespace:
    @hookimpl
    def paperclip_recovery_policies():
        return list(policies)

    return types.SimpleNamespace(paperclip_recovery_policies=paperclip_recovery_policies)


async def test_paperclip_recovery_policies_a_policy_lists_proves_and_settles_once(
    paperclip_plugin_host, paperclip_register_plugin
):
    policy = CleanupHolds(holds=[hold("h1", epoch=1), hold("h2", epoch=2)], current_epoch=2)
    paperclip_register_plugin(policies_plugin(policy), name="cleanup-holds")

    [registered] = paperclip_plugin_host.recovery_policies()
    assert registered is policy and isinstance(registered, RecoveryPolicy)
    ctx = RecoveryContext(instance_id="new-replica", now=datetime.now(UTC))
    # One reconciler pass, as the core will run it.
    for candidate in await registered.list_candidates(ctx, limit=100):
        proof = await registered.prove_owner_gone(ctx, candidate)
        if proof.gone:
            assert (
                await registered.settle(ctx, candidate, proof)
            ).outcome is SettlementOutcome.SETTLED
    assert policy.settled == ["h1"]
    # A settled candidate is never listed again; the one whose owner lives still is.
    assert [c.key for c in await registered.list_candidates(ctx, limit=100)] == ["h2"]


def test_paperclip_recovery_policies_two_with_one_name_are_an_error(
    paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(policies_plugin(CleanupHolds([], 1)), name="holds-a")
    paperclip_register_plugin(policies_plugin(CleanupHolds([], 1)), name="holds-b")
    with pytest.raises(PluginConflictError, match=r"'holds-a'.*'holds-b'"):
        paperclip_plugin_host.recovery_policies()


def test_paperclip_recovery_policies_an_object_that_is_not_a_policy_is_refused(
    paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(policies_plugin(types.SimpleNamespace(name="half")), name="half")
    with pytest.raises(PluginHookError, match="expected a RecoveryPolicy with a name"):
        paperclip_plugin_host.recovery_policies()
