"""``PortPolicy`` alone: a policy built on it is a RecoveryPolicy that works through the port."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from paperclip_hookspecs.recovery import (
    OwnerProof,
    OwnerRef,
    RecoveryCandidate,
    RecoveryContext,
    RecoveryPolicy,
    RecoveryPort,
    Settlement,
    SettlementOutcome,
)
from paperclip_recovery_kit import PortPolicy


@dataclass(frozen=True)
class Item:
    key: str
    company_id: str
    run_id: str


@dataclass(frozen=True, slots=True)
class Keys(PortPolicy):
    name: str = "keys"
    hook_api = "1.5"

    async def pending(self, port: Any, limit: int) -> Sequence[Item]:
        return port.items[:limit]

    def to_candidate(self, item: Any) -> RecoveryCandidate:
        return self.candidate(item, item.key, OwnerRef("cp-1", 1), {"seen": True})

    async def prove(self, port: Any, candidate: RecoveryCandidate) -> OwnerProof:
        return OwnerProof(True, f"proven by {port.name}", 2)

    async def settle_with(
        self, port: Any, candidate: RecoveryCandidate, proof: OwnerProof
    ) -> Settlement:
        port.settled.append((candidate.key, proof.epoch))
        return Settlement(SettlementOutcome.SETTLED, "done")


class Port:
    name = "the port"

    def __init__(self) -> None:
        self.items = [Item("a", "company-1", "run-1"), Item("b", "company-2", "run-2")]
        self.settled: list[tuple[str, int | None]] = []


def context(port: Any) -> RecoveryContext:
    return RecoveryContext(instance_id="cp-2", now=datetime.now(UTC), port=port)


async def test_a_port_policy_lists_proves_and_settles_through_the_port() -> None:
    policy, port = Keys(), Port()
    assert isinstance(policy, RecoveryPolicy)

    [first] = await policy.list_candidates(context(port), 1)
    proof = await policy.prove_owner_gone(context(port), first)
    settled = await policy.settle(context(port), first, proof)

    assert first == RecoveryCandidate(
        kind="keys",
        key="a",
        company_id="company-1",
        issue_id=None,
        run_id="run-1",
        owner=OwnerRef("cp-1", 1),
        facts={"seen": True},
    )
    assert proof.reason == "proven by the port"
    assert settled.outcome is SettlementOutcome.SETTLED
    assert port.settled == [("a", 2)]


async def test_a_pass_without_a_port_is_refused_naming_the_hook_api() -> None:
    policy = Keys()
    bare = RecoveryContext(instance_id="cp-2", now=datetime.now(UTC))
    candidate = RecoveryCandidate(kind="keys", key="a", company_id="company-1")

    with pytest.raises(RuntimeError, match=r"no control-plane port \(hook API 1\.5 needed\)"):
        await policy.list_candidates(bare, 10)
    with pytest.raises(RuntimeError, match=r"hook API 1\.5"):
        await policy.settle(bare, candidate, OwnerProof(True, "x", 1))


def test_a_policy_that_leaves_a_step_out_cannot_be_made() -> None:
    @dataclass(frozen=True, slots=True)
    class Half(PortPolicy):
        name: str = "half"

        async def pending(self, port: RecoveryPort, limit: int) -> Sequence[Any]:
            return []

    with pytest.raises(TypeError, match="abstract"):
        Half()  # type: ignore[abstract]
