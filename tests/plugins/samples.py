"""Boundary values with sensible defaults, for hook tests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from paperclip_hookspecs.completion import (
    CompletionCheck,
    CompletionReport,
    CompletionStage,
    ReadReceipt,
    RunBinding,
    WakeSnapshot,
)
from paperclip_hookspecs.presentation import ConversationTurn
from paperclip_hookspecs.receipts import Admission, PendingToolInput

BINDING = RunBinding(run_id="run-1", company_id="co-1", issue_id="iss-1", agent_id="ag-1")
SNAPSHOT = WakeSnapshot(revision="snap-1", comment_ids=("c1", "c2", "c3"), read_required=True)


def conversation_turn(**changes: Any) -> ConversationTurn:
    turn = ConversationTurn(
        run_id="run-1",
        company_id="co-1",
        issue_id="iss-1",
        turn_id="turn-1",
        status_reason="conversation_turn_finished",
        result="done",
        answer="Here is the answer.",
    )
    return replace(turn, **changes)


def pending_input(**changes: Any) -> PendingToolInput:
    pending = PendingToolInput(
        run_id="run-1",
        input_id="in-1",
        tool_name="paperclip_call_assigned_tool",
        admission=Admission.EARLIER_CONTROLLER,
        running_here=False,
        owner_gone=True,
    )
    return replace(pending, **changes)


def receipt(**changes: Any) -> ReadReceipt:
    return replace(
        ReadReceipt(binding=BINDING, snapshot_revision="snap-1", complete=True, cursor="p3"),
        **changes,
    )


def completion_check(**changes: Any) -> CompletionCheck:
    check = CompletionCheck(
        stage=CompletionStage.FEEDBACK,
        binding=BINDING,
        report=CompletionReport(status="done", summary="Fixed."),
        snapshot=SNAPSHOT,
        receipt=None,
    )
    return replace(check, **changes)
