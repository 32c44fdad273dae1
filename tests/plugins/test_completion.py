"""``paperclip_check_completion``: the built-in current-wake-comments guard (seed 000), and guards."""

from __future__ import annotations

from dataclasses import replace

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.completion import (
    NATIVE_CURRENT_WAKE_COMMENTS_UNREAD,
    READ_CURRENT_WAKE_COMMENTS,
    CompletionCheck,
    CompletionRefusal,
    CompletionStage,
)

from tests.plugins.samples import BINDING, SNAPSHOT, completion_check, receipt


def test_paperclip_check_completion_accepts_a_complete_current_read(paperclip_plugin_host):
    assert paperclip_plugin_host.check_completion(completion_check(receipt=receipt())) is None


def test_paperclip_check_completion_accepts_when_no_read_is_required(paperclip_plugin_host):
    assert paperclip_plugin_host.check_completion(completion_check(snapshot=None)) is None
    relaxed = replace(SNAPSHOT, read_required=False)
    assert paperclip_plugin_host.check_completion(completion_check(snapshot=relaxed)) is None


@pytest.mark.parametrize("stage", list(CompletionStage))
def test_paperclip_check_completion_lets_a_blocked_report_through(paperclip_plugin_host, stage):
    # Asking for help is no completion report: the built-in guard has nothing to guard.
    check = completion_check(stage=stage)
    blocked = replace(check, report=replace(check.report, status="blocked"))
    assert paperclip_plugin_host.check_completion(blocked) is None


def test_paperclip_check_completion_refuses_an_unread_report_with_a_correction(
    paperclip_plugin_host,
):
    refusal = paperclip_plugin_host.check_completion(completion_check())
    assert refusal is not None
    assert (refusal.code, refusal.reason) == (NATIVE_CURRENT_WAKE_COMMENTS_UNREAD, "unread")
    assert refusal.correction is not None
    assert (
        refusal.correction.instruction == READ_CURRENT_WAKE_COMMENTS == "read_current_wake_comments"
    )
    assert refusal.correction.cursor is None and not refusal.correction.restart


def test_paperclip_check_completion_continues_a_partial_read_from_its_cursor(paperclip_plugin_host):
    refusal = paperclip_plugin_host.check_completion(
        completion_check(receipt=receipt(complete=False, cursor="page-2"))
    )
    assert refusal is not None and refusal.reason == "partial"
    assert refusal.correction is not None
    assert (refusal.correction.cursor, refusal.correction.restart) == ("page-2", False)


def test_paperclip_check_completion_restarts_a_read_of_a_changed_snapshot(paperclip_plugin_host):
    stale = receipt(snapshot_revision="snap-0", complete=False, cursor="page-2")
    refusal = paperclip_plugin_host.check_completion(completion_check(receipt=stale))
    assert refusal is not None and refusal.reason == "changed_snapshot"
    assert refusal.correction is not None
    assert (refusal.correction.cursor, refusal.correction.restart) == (None, True)


@pytest.mark.parametrize("field", ["run_id", "company_id", "issue_id", "agent_id"])
def test_paperclip_check_completion_refuses_a_foreign_receipt(paperclip_plugin_host, field):
    foreign = receipt(binding=replace(BINDING, **{field: "someone-else"}))
    refusal = paperclip_plugin_host.check_completion(completion_check(receipt=foreign))
    assert refusal is not None and refusal.reason == "foreign"


def test_paperclip_check_completion_terminal_stage_rechecks_the_exact_snapshot(
    paperclip_plugin_host,
):
    # A read that was complete, but of a snapshot a later comment edit replaced.
    check = completion_check(
        stage=CompletionStage.TERMINAL, receipt=receipt(snapshot_revision="snap-0")
    )
    refusal = paperclip_plugin_host.check_completion(check)
    assert refusal is not None
    assert refusal.code == "native_current_wake_comments_unread"


def test_paperclip_check_completion_the_first_refusing_guard_wins(
    paperclip_plugin_host, paperclip_register_plugin
):
    class NoEmptySummaries:
        @hookimpl
        def paperclip_check_completion(self, check: CompletionCheck) -> CompletionRefusal | None:
            if check.report.summary:
                return None
            return CompletionRefusal(
                code="completion_summary_missing", reason="empty", message="Say what you did."
            )

    paperclip_register_plugin(NoEmptySummaries(), name="summaries")
    unread_and_empty = completion_check()
    unread_and_empty = replace(
        unread_and_empty, report=replace(unread_and_empty.report, summary="")
    )

    refusal = paperclip_plugin_host.check_completion(unread_and_empty)
    assert refusal is not None and refusal.code == "completion_summary_missing"
    # With a summary the plugin lets it through, and the built-in guard still refuses.
    refusal = paperclip_plugin_host.check_completion(completion_check())
    assert refusal is not None and refusal.code == NATIVE_CURRENT_WAKE_COMMENTS_UNREAD
