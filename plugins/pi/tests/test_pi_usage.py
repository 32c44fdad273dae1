"""Each assistant message's usage, as the fake Pi sends it at ``message_end``, reported once."""

from __future__ import annotations

import pytest
from paperclip_pi.usage import UsageReports, message_usage
from paperclip_provider_kit.testing import (
    Events,
    FakeDrivers,
    Reported,
    ToolServer,
    counts,
    scripted_turn,
    usage_across_a_resume,
    usage_log,
)
from paperclip_provider_kit.testing import ScriptFolder as Fake

TurnUsage = pytest.importorskip("paperclip_hookspecs.usage", reason="hook API < 1.8").TurnUsage

pytestmark = pytest.mark.process

COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens")
"""What Pi reports: it counts reasoning tokens within the output, not apart."""


async def test_each_response_reports_the_usage_and_cost_the_fake_sent_once(
    drivers: FakeDrivers, fake: Fake, tool_server: ToolServer
) -> None:
    priced = {"input_tokens": 3000, "cached_input_tokens": 2000, "output_tokens": 60, "cost": 0.02}
    fake.script(
        "m1",
        [
            {"call_tool": {"name": "echo", "arguments": {"text": "hi"}}, "usage": priced},
            {"shell": "true"},
            {"message": "Done."},
        ],
    )
    reported, events = Reported(), Events()
    asked = scripted_turn(drivers.state_dir, tool_server, system="")
    result = await drivers.turn(asked, events, report_usage=reported)
    assert result.status == "completed", result.error

    fake_sent = usage_log(fake)
    assert len(fake_sent) == 3
    # The same message comes again at turn_end and agent_end: it is reported once, at its end.
    assert [u.key.split(":")[1] for u in reported] == [s["responseId"] for s in fake_sent]
    assert len({u.key for u in reported}) == 3
    assert counts(reported, COUNTS) == [{key: s[key] for key in COUNTS} for s in fake_sent]
    assert counts(reported, COUNTS)[0] == {k: v for k, v in priced.items() if k in COUNTS}
    # Pi's own cost, in micro-dollars; none where it knew no price (0).
    assert [(u.cost_micros, u.model, u.reasoning_tokens) for u in reported] == [
        (20_000, "m1", 0),
        (None, "m1", 0),
        (None, "m1", 0),
    ]


async def test_a_resumed_session_reports_only_its_new_responses(
    drivers: FakeDrivers, fake: Fake, tool_server: ToolServer
) -> None:
    done, again, first, second = await usage_across_a_resume(drivers, tool_server)
    assert again.session_ref == done.session_ref
    assert [u.key.split(":")[1] for u in first + second] == [
        s["responseId"] for s in usage_log(fake)
    ]
    assert len(first) == len(second) == 1
    # The session's second response, not its first again: its usage is its own.
    assert counts(second) != counts(first)


async def test_a_failed_response_that_used_nothing_reports_nothing(
    drivers: FakeDrivers, fake: Fake, tool_server: ToolServer
) -> None:
    fake.script("m1", [{"fail": "the model is down"}])
    reported = Reported()
    asked = scripted_turn(drivers.state_dir, tool_server, system="")
    result = await drivers.turn(asked, report_usage=reported)
    assert result.status == "failed"
    assert reported == []


async def test_the_same_message_is_reported_once_by_a_driver() -> None:
    reported = Reported()

    class Context:
        report_usage = reported

    message = {
        "role": "assistant",
        "model": "m1",
        "timestamp": 1700000000000,
        "responseId": "chatcmpl_1",
        "usage": {"input": 10, "output": 4, "cacheRead": 5, "cacheWrite": 1, "cost": {"total": 0}},
    }
    usage = message_usage(message)
    assert usage == TurnUsage(
        key="1700000000000:chatcmpl_1",
        model="m1",
        input_tokens=16,
        cached_input_tokens=5,
        output_tokens=4,
    )
    reports = UsageReports(Context())  # type: ignore[arg-type]
    await reports.send(usage)
    await reports.send(message_usage(dict(message)))
    assert reported == [usage]
