"""The orphaned-callback rule and policy alone, against a scripted control-plane port."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import pytest
from paperclip_hookspecs.receipts import (
    SEMANTIC_TOOL_OUTCOME_UNKNOWN,
    TOOL_CALL_INTERRUPTED_BY_RESTART,
    Admission,
    PendingToolInput,
    ReceiptStatus,
    ToolReceipt,
    ToolRecoveryAction,
)
from paperclip_hookspecs.recovery import (
    CallbacksRecovered,
    PendingCallback,
    RecoveryContext,
    RecoveryPolicy,
    SettlementOutcome,
)
from paperclip_orphaned_callbacks import plugin
from paperclip_orphaned_callbacks.policy import OrphanedCallbacksPolicy
from paperclip_orphaned_callbacks.rule import decide

ORPHAN = PendingToolInput(
    run_id="run-1",
    input_id="7",
    tool_name="notify_webhook",
    admission=Admission.EARLIER_CONTROLLER,
    running_here=False,
    owner_gone=True,
)
RECEIPT = ToolReceipt(command_id="run-1:c", status=ReceiptStatus.APPLIED, result={"ok": 1})


def test_an_orphan_of_a_gone_controller_settles_as_interrupted():
    decision = decide(ORPHAN)
    assert decision is not None
    assert decision.action is ToolRecoveryAction.SETTLE_INTERRUPTED
    assert decision.error_code == TOOL_CALL_INTERRUPTED_BY_RESTART
    assert decision.retryable is False
    unknown = decide(replace(ORPHAN, authority_answer=SEMANTIC_TOOL_OUTCOME_UNKNOWN))
    assert unknown is not None and unknown.action is ToolRecoveryAction.SETTLE_INTERRUPTED


def test_a_receipt_is_replayed_first_whoever_runs_it():
    for changes in ({}, {"running_here": True}, {"admission": Admission.THIS_CONTROLLER}):
        decision = decide(replace(ORPHAN, receipt=RECEIPT, **changes))
        assert decision is not None and decision.action is ToolRecoveryAction.REPLAY_RECEIPT
        assert decision.receipt == RECEIPT


@pytest.mark.parametrize(
    "changes",
    [
        {"running_here": True},
        {"failed_here": True},
        {"admission": Admission.THIS_CONTROLLER},
        {"owner_gone": False},
        {"owner_gone": False, "authority_answer": SEMANTIC_TOOL_OUTCOME_UNKNOWN},
    ],
)
def test_what_may_still_get_its_own_result_stays_pending(changes):
    decision = decide(replace(ORPHAN, **changes))
    assert decision is not None and decision.action is ToolRecoveryAction.KEEP_PENDING


def test_a_core_tool_is_left_to_the_cores_rule():
    assert decide(replace(ORPHAN, effect_in_journal=True)) is None


def test_it_never_asks_to_run_a_tool_again():
    for running in (True, False):
        for admission in Admission:
            for gone in (True, False):
                for answer in (None, SEMANTIC_TOOL_OUTCOME_UNKNOWN):
                    pending = replace(
                        ORPHAN,
                        running_here=running,
                        admission=admission,
                        owner_gone=gone,
                        authority_answer=answer,
                    )
                    decision = decide(pending)
                    assert decision is not None
                    assert decision.action is not ToolRecoveryAction.REDISPATCH


@dataclass
class ScriptedPort:
    callbacks: list[PendingCallback]
    answers: dict[str, CallbacksRecovered]
    asked: list[tuple[str, int]] = field(default_factory=list)

    async def pending_callbacks(self, limit: int) -> Sequence[PendingCallback]:
        return self.callbacks[:limit]

    async def recover_callbacks(self, run_id: str, *, epoch: int) -> CallbacksRecovered:
        self.asked.append((run_id, epoch))
        return self.answers[run_id]


def callback(run_id: str, admitted: int, epoch: int) -> PendingCallback:
    return PendingCallback(
        run_id=run_id,
        company_id="co",
        input_id=f"{run_id}-in",
        tool_name="notify_webhook",
        admitted_by="replica-0",
        admitted_epoch=admitted,
        epoch=epoch,
    )


async def test_the_policy_lists_proves_by_the_fence_and_settles_through_the_port():
    port = ScriptedPort(
        [callback("a", 1, 2), callback("b", 3, 3)],
        {"a": CallbacksRecovered(settled=1, pending=0)},
    )
    ctx = RecoveryContext(instance_id="replica-1", now=datetime.now(UTC), port=port)  # type: ignore[arg-type]
    policy = OrphanedCallbacksPolicy()
    assert isinstance(policy, RecoveryPolicy)
    a, b = await policy.list_candidates(ctx, 10)
    assert (a.kind, a.key, a.run_id) == ("orphaned_tool_callbacks", "a-in", "a")
    proof = await policy.prove_owner_gone(ctx, a)
    assert proof.gone and proof.epoch == 2
    assert not (await policy.prove_owner_gone(ctx, b)).gone  # admitted at the current epoch
    settled = await policy.settle(ctx, a, proof)
    assert settled.outcome is SettlementOutcome.SETTLED and port.asked == [("a", 2)]


async def test_an_input_still_pending_is_kept_for_the_next_pass():
    port = ScriptedPort([callback("a", 1, 2)], {"a": CallbacksRecovered(settled=0, pending=1)})
    ctx = RecoveryContext(instance_id="replica-1", now=datetime.now(UTC), port=port)  # type: ignore[arg-type]
    policy = OrphanedCallbacksPolicy()
    [a] = await policy.list_candidates(ctx, 10)
    settled = await policy.settle(ctx, a, await policy.prove_owner_gone(ctx, a))
    assert settled.outcome is SettlementOutcome.KEPT


def test_the_plugin_registers_the_rule_and_the_policy():
    assert [p.name for p in plugin.paperclip_recovery_policies()] == ["orphaned_tool_callbacks"]
    decision = plugin.paperclip_recover_tool_input(ORPHAN)
    assert decision is not None and decision.action is ToolRecoveryAction.SETTLE_INTERRUPTED
