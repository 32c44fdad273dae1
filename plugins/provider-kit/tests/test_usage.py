"""A fake's scripted usage: a step's own, or the one of its place; what a step may say."""

from __future__ import annotations

import pytest
from paperclip_provider_kit.usage import ScriptedUsage, UsageError, check_option


def test_a_step_s_option_is_its_usage() -> None:
    option = {"input_tokens": 900, "cached_input_tokens": 400, "output_tokens": 30, "cost": 0.5}
    usage = ScriptedUsage.for_response(7, option)
    assert usage == ScriptedUsage(900, 400, 30, 0, 0.5)
    assert usage.total_tokens == 930
    assert usage.log_entry(messageID="msg_1") == {
        "type": "usage",
        "messageID": "msg_1",
        "input_tokens": 900,
        "cached_input_tokens": 400,
        "output_tokens": 30,
        "reasoning_tokens": 0,
        "cost": 0.5,
    }


def test_without_one_each_place_has_its_own_usage_and_no_cost() -> None:
    first, second, third = (ScriptedUsage.for_response(n) for n in range(3))
    assert first == ScriptedUsage.for_response(0)  # deterministic
    for field in ("input_tokens", "output_tokens", "reasoning_tokens"):
        values = [getattr(u, field) for u in (first, second, third)]
        assert len(set(values)) == 3, field
    assert first.cached_input_tokens == 0 < second.cached_input_tokens
    for usage in (first, second, third):
        assert usage.cached_input_tokens <= usage.input_tokens
        assert 0 < usage.reasoning_tokens <= usage.output_tokens
        assert usage.cost == 0


@pytest.mark.parametrize(
    ("option", "problem"),
    [
        ([1, 2], "must be an object"),
        ({"input": 3}, "unknown usage key"),
        ({"input_tokens": -1}, "integers >= 0"),
        ({"input_tokens": True}, "integers >= 0"),
        ({"input_tokens": 1, "cached_input_tokens": 2}, "within input_tokens"),
        ({"output_tokens": 1, "reasoning_tokens": 2}, "within output_tokens"),
        ({"cost": "free"}, "cost must be a number"),
    ],
)
def test_a_bad_option_is_refused_saying_why(option: object, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        check_option(option)
    with pytest.raises(UsageError, match=problem):
        ScriptedUsage.for_response(0, option)  # type: ignore[arg-type]
