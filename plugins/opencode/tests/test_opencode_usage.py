"""Each assistant message's tokens and cost, as the fake server sends them, reported once."""

from __future__ import annotations

import dataclasses

import pytest
from paperclip_opencode.usage import UsageReports, message_usage
from paperclip_provider_kit.testing import (
    Events,
    FakeDrivers,
    Reported,
    ToolServer,
    counts,
    run_turn,
    scripted_turn,
    usage_across_a_resume,
    usage_log,
)
from paperclip_provider_kit.testing import ScriptFolder as Fake
from paperclip_provider_kit.usage import COUNTS

TurnUsage = pytest.importorskip("paperclip_hookspecs.usage", reason="hook API < 1.8").TurnUsage

pytestmark = pytest.mark.process


async def test_each_answer_reports_the_tokens_and_cost_the_fake_sent_once(
    drivers: FakeDrivers, fake: Fake, tool_server: ToolServer
) -> None:
    priced = {
        "input_tokens": 3000,
        "cached_input_tokens": 2000,
        "output_tokens": 60,
        "reasoning_tokens": 15,
        "cost": 0.0125,
    }
    fake.script(
        "m1",
        {
            "turns": [
                [
                    {"call_tool": {"name": "echo", "arguments": {"text": "hi"}}, "usage": priced},
                    {"message": "Done."},
                ],
                [{"message": "Again."}],
            ]
        },
    )
    reported, events = Reported(), Events()
    async with drivers.driver(report_usage=reported) as driver:
        asked = scripted_turn(drivers.state_dir, tool_server, system="")
        result = await run_turn(driver, asked, events)
        assert result.status == "completed", result.error
        first_turn = len(reported)
        again = await run_turn(driver, dataclasses.replace(asked, session_ref=result.session_ref))
        assert again.status == "completed", again.error

    fake_sent = usage_log(fake)
    assert first_turn == 2 and len(fake_sent) == 3
    # OpenCode sent each completed answer twice: each is reported once, by its message id.
    completed = [
        e.payload["info"]["id"]
        for e in events.items
        if e.type == "message.updated" and "completed" in e.payload["info"]["time"]
    ]
    assert completed == [m for m in [s["messageID"] for s in fake_sent[:2]] for _ in range(2)]
    assert [u.key for u in reported] == [s["messageID"] for s in fake_sent]
    # The numbers the model sent: cached tokens counted in the input, reasoning in the output.
    assert counts(reported) == [{key: s[key] for key in COUNTS} for s in fake_sent]
    assert counts(reported)[0] == {k: v for k, v in priced.items() if k != "cost"}
    # OpenCode's own cost, in micro-dollars; none where it knew no price (0).
    assert [(u.cost_micros, u.currency, u.model) for u in reported] == [
        (12_500, "USD", "m1"),
        (None, "USD", "m1"),
        (None, "USD", "m1"),
    ]


async def test_a_new_server_on_the_same_session_reports_only_the_new_answers(
    drivers: FakeDrivers, fake: Fake, tool_server: ToolServer
) -> None:
    _, _, first, second = await usage_across_a_resume(drivers, tool_server)
    assert [u.key for u in first + second] == [s["messageID"] for s in usage_log(fake)]
    assert len(first) == len(second) == 1


def test_an_answer_reports_nothing_until_it_is_complete() -> None:
    info = {
        "id": "msg_1",
        "role": "assistant",
        "modelID": "m1",
        "cost": 0,
        "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        "time": {"created": 1},
    }
    assert message_usage(info) is None
    assert message_usage({**info, "role": "user", "time": {"created": 1, "completed": 2}}) is None
    done = {
        **info,
        "time": {"created": 1, "completed": 2},
        "tokens": {"input": 10, "output": 4, "reasoning": 1, "cache": {"read": 5, "write": 2}},
    }
    assert message_usage(done) == TurnUsage(
        key="msg_1",
        model="m1",
        input_tokens=17,
        cached_input_tokens=5,
        output_tokens=5,
        reasoning_tokens=1,
    )


async def test_the_same_answer_is_reported_once_by_a_driver() -> None:
    reported = Reported()

    class Context:
        report_usage = reported

    reports = UsageReports(Context())  # type: ignore[arg-type]
    usage = TurnUsage(key="msg_1", model="m1", input_tokens=10)
    await reports.send(usage)
    await reports.send(usage)
    assert reported == [usage]
