"""``paperclip_recover_tool_input``: the built-in rule of seed 003, and a plugin answering first."""

from __future__ import annotations

import types

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.receipts import (
    SEMANTIC_TOOL_OUTCOME_UNKNOWN,
    TOOL_CALL_INTERRUPTED_BY_RESTART,
    Admission,
    PendingToolInput,
    ReceiptStatus,
    ToolReceipt,
    ToolRecovery,
    ToolRecoveryAction,
)

from paperclip.plugin_host import NoPluginAnswerError
from tests.plugins.samples import pending_input


@pytest.fixture
def orphaned_callbacks(paperclip_register_plugin):
    """The orphaned-callback policy (``plugins/orphaned-callbacks``, part of the core's default
    install), registered."""
    from paperclip_orphaned_callbacks import plugin

    paperclip_register_plugin(plugin, name="orphaned-callbacks")
    return plugin


RECEIPT = ToolReceipt(command_id="cmd-7", status=ReceiptStatus.APPLIED, result={"ok": True})


def test_paperclip_recover_tool_input_replays_a_durable_receipt(paperclip_plugin_host):
    # Whoever admitted it and wherever it runs: the receipt proves the effect, replay it.
    for admission in Admission:
        pending = pending_input(admission=admission, running_here=True, receipt=RECEIPT)
        recovery = paperclip_plugin_host.recover_tool_input(pending)
        assert recovery.action is ToolRecoveryAction.REPLAY_RECEIPT
        assert recovery.receipt == RECEIPT


def test_paperclip_recover_tool_input_the_builtin_never_settles_an_effect_that_may_have_happened(
    paperclip_plugin_host,
):
    # Without the orphaned-callback policy an orphan waits (seed 003's "before").
    for answer in (None, SEMANTIC_TOOL_OUTCOME_UNKNOWN):
        recovery = paperclip_plugin_host.recover_tool_input(pending_input(authority_answer=answer))
        assert recovery.action is ToolRecoveryAction.KEEP_PENDING


def test_paperclip_recover_tool_input_the_builtin_runs_a_core_tool_again(paperclip_plugin_host):
    # Its effect commits with its result: a pending core call had none (docs/decisions).
    recovery = paperclip_plugin_host.recover_tool_input(pending_input(effect_in_journal=True))
    assert recovery.action is ToolRecoveryAction.REDISPATCH


def test_paperclip_recover_tool_input_the_policy_settles_an_orphan_of_a_gone_controller(
    paperclip_plugin_host, orphaned_callbacks
):
    recovery = paperclip_plugin_host.recover_tool_input(pending_input())
    assert recovery.action is ToolRecoveryAction.SETTLE_INTERRUPTED
    assert (
        recovery.error_code
        == TOOL_CALL_INTERRUPTED_BY_RESTART
        == "tool_call_interrupted_by_restart"
    )
    assert recovery.retryable is False
    # A core tool is left to the core's rule.
    core = paperclip_plugin_host.recover_tool_input(pending_input(effect_in_journal=True))
    assert core.action is ToolRecoveryAction.REDISPATCH


def test_paperclip_recover_tool_input_the_policy_settles_an_unknown_outcome_only_when_the_owner_is_gone(
    paperclip_plugin_host, orphaned_callbacks
):
    unknown = pending_input(authority_answer=SEMANTIC_TOOL_OUTCOME_UNKNOWN)
    assert (
        paperclip_plugin_host.recover_tool_input(unknown).action
        is ToolRecoveryAction.SETTLE_INTERRUPTED
    )
    alive = pending_input(authority_answer=SEMANTIC_TOOL_OUTCOME_UNKNOWN, owner_gone=False)
    assert paperclip_plugin_host.recover_tool_input(alive).action is ToolRecoveryAction.KEEP_PENDING


@pytest.mark.parametrize(
    "changes",
    [
        {"running_here": True},  # this process still runs it: its own result settles it
        {"admission": Admission.THIS_CONTROLLER},  # dispatched here, and saw it fail
        {"admission": Admission.THIS_CONTROLLER, "failed_here": True},
        {"owner_gone": False},  # the earlier controller may still record its result
    ],
)
def test_paperclip_recover_tool_input_keeps_pending_what_it_may_not_settle(
    paperclip_plugin_host, orphaned_callbacks, changes
):
    recovery = paperclip_plugin_host.recover_tool_input(pending_input(**changes))
    assert recovery.action is ToolRecoveryAction.KEEP_PENDING
    assert recovery.error_code is None and recovery.receipt is None


def test_paperclip_recover_tool_input_a_plugin_finding_a_receipt_answers_first(
    paperclip_plugin_host, paperclip_register_plugin
):
    class ExternalReceipts:
        """Finds the receipts of one tool in an external system."""

        @hookimpl
        def paperclip_recover_tool_input(self, pending: PendingToolInput) -> ToolRecovery | None:
            if pending.tool_name != "post_to_tracker":
                return None
            return ToolRecovery.replay(RECEIPT)

    paperclip_register_plugin(ExternalReceipts(), name="external-receipts")

    ours = paperclip_plugin_host.recover_tool_input(pending_input(tool_name="post_to_tracker"))
    assert ours.action is ToolRecoveryAction.REPLAY_RECEIPT
    others = paperclip_plugin_host.recover_tool_input(pending_input(tool_name="connections_search"))
    assert others.action is ToolRecoveryAction.KEEP_PENDING  # the built-in rule


def test_paperclip_recover_tool_input_without_the_builtin_has_no_answer(paperclip_bare_plugin_host):
    paperclip_bare_plugin_host.register(types.SimpleNamespace(), name="nothing")
    with pytest.raises(
        NoPluginAnswerError, match="no plugin answered paperclip_recover_tool_input"
    ):
        paperclip_bare_plugin_host.recover_tool_input(pending_input())
