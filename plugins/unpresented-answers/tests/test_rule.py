"""The acceptance rule of presentation recovery, case by case (seed 002)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from paperclip_hookspecs.presentation import UnpresentedTurn
from paperclip_unpresented_answers.plugin import paperclip_accept_unpresented_turn

HELD = UnpresentedTurn(
    run_id="r1",
    status_reason="governed_response_waiting",
    result="yielded",
    issue_status="in_review",
    conversation_state="active",
    is_current_turn=True,
    same_agent=True,
    same_user=True,
    same_session_generation=True,
    other_execution_run=False,
)


def test_a_held_yielded_turn_is_accepted_whatever_status_its_gate_committed():
    assert paperclip_accept_unpresented_turn(HELD) is True
    assert paperclip_accept_unpresented_turn(replace(HELD, result="done")) is True
    assert paperclip_accept_unpresented_turn(replace(HELD, issue_status="blocked")) is True


def test_a_finished_turn_still_needs_in_progress():
    finished = replace(HELD, status_reason="conversation_turn_finished", result="done")
    assert paperclip_accept_unpresented_turn(replace(finished, issue_status="in_progress"))
    assert not paperclip_accept_unpresented_turn(finished)  # in_review


@pytest.mark.parametrize(
    "change",
    [
        {"is_current_turn": False},
        {"same_agent": False},
        {"same_user": False},
        {"same_session_generation": False},
        {"conversation_state": "waiting"},
        {"conversation_state": "idle"},
        {"other_execution_run": True},
        {"result": "needs_review"},
        {"result": "blocked"},
    ],
)
def test_a_stale_superseded_or_unsuccessful_turn_is_left_alone(change):
    assert paperclip_accept_unpresented_turn(replace(HELD, **change)) is False
