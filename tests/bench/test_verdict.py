"""``bench/verdict.py``: what makes a measurement invalid, and the exit code it ends with."""

from __future__ import annotations

import math

from verdict import (
    INVALID,
    MISSED,
    OK,
    UNAVAILABLE,
    Target,
    Verdict,
    sample_problems,
    value_problems,
)


def test_every_sample_asked_for_is_there_once_and_above_zero():
    samples = {"a": 0.5, "b": None, "c": -0.1, "d": math.nan, "e": 0.0, "x": 1.0}
    assert sample_problems("t", samples, ["a", "b", "c", "d", "e"], count=6) == [
        "t: 5 samples asked for, 6 wanted",
        "t: 1 of 5 samples missing: b",
        "t: 1 samples nobody asked for: x",
        "t: 3 samples not above zero: c = -0.1, d = nan, e = 0",
    ]
    assert sample_problems("t", {"a": 0.5}, ["a"], count=1) == []


def test_many_bad_samples_are_named_up_to_five():
    problems = sample_problems("t", {}, [f"s{i}" for i in range(8)])
    assert problems == ["t: 8 of 8 samples missing: s0, s1, s2, s3, s4 and 3 more"]


def test_samples_without_an_identity_are_numbered():
    assert value_problems("passes", []) == ["passes: no sample"]
    assert value_problems("passes", [1.0, -2.0], count=3) == [
        "passes: 2 samples asked for, 3 wanted",
        "passes: 1 samples not above zero: 1 = -2",
    ]


def test_an_invalid_measurement_wins_over_its_target():
    met = Target("x", "1", "1", 1.0, "at most 2x", True)
    missed = Target("x", "3", "1", 3.0, "at most 2x", False)
    reported = Target("y", "1", "1", 1.0)
    assert Verdict("b", [met, reported]).exit_code == OK
    assert Verdict("b", [met, missed]).exit_code == MISSED
    assert Verdict("b", [missed], ["a sample missing"]).exit_code == INVALID
    assert Verdict("b", unavailable="needs root").exit_code == UNAVAILABLE


def test_a_ratio_that_is_not_a_number_is_written_as_none():
    answer = Verdict("b", [Target("x", "?", "?", math.nan, "under 5x", False)], ["none"]).as_json()
    assert answer["rows"][0]["ratio"] is None
    assert answer["status"] == "invalid"
