"""``paperclip_recovery_policies``: named policies whose async methods the reconciler drives."""

from __future__ import annotations

import asyncio
import types
from dataclasses import dataclass, field

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

from paperclip.plugin_host import PluginConflictError, PluginHookError


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


@pytest.fixture
def paperclip_settings(paperclip_settings):
    # Passes every 50 ms, so that a few of them take no time.
    return paperclip_settings.model_copy(update={"reconcile_seconds": 0.05})


async def recovery(client) -> dict:
    response = await client.get("/api/recovery")
    assert response.status_code == 200, response.text
    return response.json()


async def until(client, done, within: float = 10.0) -> dict:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        status = await recovery(client)
        if done(status):
            return status
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(status)
        await asyncio.sleep(0.05)


def report(status: dict, name: str) -> dict:
    [found] = [p for p in status["policies"] if p["name"] == name]
    return found


async def test_paperclip_recovery_policies_the_reconciler_lists_proves_and_settles_once(
    paperclip_plugin_host, paperclip_register_plugin, paperclip_client
):
    policy = CleanupHolds(holds=[hold("h1", epoch=1), hold("h2", epoch=2)], current_epoch=2)
    paperclip_register_plugin(policies_plugin(policy), name="cleanup-holds")
    [registered] = paperclip_plugin_host.recovery_policies()
    assert registered is policy and isinstance(registered, RecoveryPolicy)

    # The server's own reconciler, in the background (already passing before the
    # registration): a few passes later...
    start = (await recovery(paperclip_client))["passes"]
    status = await until(paperclip_client, lambda s: s["passes"] >= start + 3)
    # ...the candidate whose owner is gone was settled once; the other is kept, with why.
    assert policy.settled == ["h1"]
    mine = report(status, "native_completed_turn_cleanup_hold")
    assert mine["settled_total"] == 1 and mine["failed_total"] == 0
    assert (mine["candidates"], mine["kept"]) == (1, 1)
    assert mine["reasons"] == {"the closing controller holds the current epoch": 1}


@dataclass
class Broken:
    """A policy whose settlement always raises, and one whose listing does."""

    name: str
    fails_at: str
    attempts: int = 0

    async def list_candidates(self, ctx: RecoveryContext, limit: int) -> list[RecoveryCandidate]:
        if self.fails_at == "list":
            raise RuntimeError("the store is unreadable")
        return [RecoveryCandidate(kind=self.name, key="stuck-1", company_id="")]

    async def prove_owner_gone(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate
    ) -> OwnerProof:
        return OwnerProof(gone=True, reason="no owner")

    async def settle(
        self, ctx: RecoveryContext, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        self.attempts += 1
        raise RuntimeError("the hold row is corrupt")


async def test_paperclip_recovery_policies_a_candidate_that_keeps_failing_is_quarantined(
    paperclip_register_plugin, paperclip_client
):
    failing = Broken("always_failing", fails_at="settle")
    unreadable = Broken("unreadable", fails_at="list")
    policy = CleanupHolds(holds=[hold("h1", epoch=1)], current_epoch=2)
    # The unreadable one is asked first: it stops neither the others nor the passes.
    paperclip_register_plugin(policies_plugin(unreadable, failing, policy), name="mixed")

    status = await until(paperclip_client, lambda s: s["quarantined"])
    [item] = status["quarantined"]
    assert (item["kind"], item["key"], item["attempts"]) == ("always_failing", "stuck-1", 5)
    assert "the hold row is corrupt" in item["reason"]
    assert policy.settled == ["h1"]
    assert "the store is unreadable" in report(status, "unreadable")["last_error"]

    # Set aside: later passes do not try it again.
    passes = status["passes"]
    status = await until(paperclip_client, lambda s: s["passes"] >= passes + 3)
    assert failing.attempts == 5
    assert report(status, "always_failing")["reasons"] == {"quarantined": 1}


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
