"""A run turn has at most one completion event; a lost turn's completion is named a replay."""

from __future__ import annotations

import uuid

from paperclip.chaos.completions import judge

RUN = uuid.uuid4()


def completion(turn: int, seq: int, status: str, *, run_turn: int, source: str = "r:1") -> dict:
    return {
        "run_id": RUN,
        "turn": turn,
        "seq": seq,
        "source_instance": source,
        "source_seq": seq,
        "turn_status": status,
        "turn_error": "runner_restarted" if status == "lost" else None,
        "run_turn": run_turn,
    }


def test_one_completion_of_the_runs_last_turn_is_its_end():
    found = judge([completion(1, 40, "completed", run_turn=1)])
    assert found.violations == [] and found.replayed == []


def test_a_lost_turn_completed_before_its_runner_died_is_a_replay_not_a_violation():
    found = judge(
        [
            completion(1, 40, "lost", run_turn=2, source="runner:1"),
            completion(2, 61, "completed", run_turn=2, source="runner:2"),
        ]
    )
    assert found.violations == []
    assert found.replayed == [
        {"run": str(RUN), "turn": 1, "seq": 40, "error_code": "runner_restarted", "next_turn": 2}
    ]


def test_two_completions_of_one_turn_are_a_violation():
    found = judge(
        [
            completion(2, 40, "completed", run_turn=2, source="runner:1"),
            completion(2, 61, "completed", run_turn=2, source="runner:2"),
        ]
    )
    assert [v.kind for v in found.violations] == ["turn_completed_twice"]
    assert f"run {RUN} turn 2: seq 40 from runner:1:40, seq 61 from runner:2:61" == (
        found.violations[0].detail
    )
    assert found.replayed == []


def test_the_completion_of_a_lost_last_turn_is_no_replay():
    # Its run ended without a next turn (held after too many losses): nothing replayed it.
    found = judge([completion(3, 90, "lost", run_turn=3)])
    assert found.violations == [] and found.replayed == []
