"""Each model response's usage, as the fake app-server sends it, reported once through the runner."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from codex_testing import Events, FakeCodex, ToolServer, bounded, driver_context
from paperclip_codex.driver import CodexDriver
from paperclip_codex.usage import UsageReports, turn_usage
from paperclip_hookspecs.providers import TurnInput

TurnUsage = pytest.importorskip("paperclip_hookspecs.usage", reason="hook API < 1.8").TurnUsage

pytestmark = pytest.mark.process


class Reported(list[Any]):
    """``DriverContext.report_usage``: keeps what the driver reported."""

    async def __call__(self, usage: Any) -> None:
        self.append(usage)


COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")


def counts(usage: Any) -> dict[str, int]:
    return {key: getattr(usage, key) for key in COUNTS}


def sent(fake: FakeCodex) -> list[dict[str, int]]:
    """The counts the fake sent, response by response (its log)."""
    return [{key: entry[key] for key in COUNTS} for entry in fake.entries("usage")]


def usage_driver(state_dir: Path, fake: FakeCodex, reported: Reported) -> CodexDriver:
    context = dataclasses.replace(driver_context(state_dir, fake.command()), report_usage=reported)
    return CodexDriver(context)


def turn(fake: FakeCodex, cwd: Path, tools: ToolServer, ref: str | None = None) -> TurnInput:
    return TurnInput(
        run_id="run-1",
        prompt="Fix it.",
        cwd=str(cwd),
        session_ref=ref,
        mcp=tools.endpoint(),
        config=fake.config(model="scripted-model"),
    )


async def test_each_response_reports_the_numbers_the_fake_sent_once(
    fake: FakeCodex, tool_server: ToolServer, state_dir: Path, tmp_path: Path
) -> None:
    mine = {"input_tokens": 4000, "cached_input_tokens": 1500, "output_tokens": 90}
    fake.script(
        [
            {"call_tool": {"name": "echo", "arguments": {"text": "a"}}, "usage": mine},
            {"page_tool": {"name": "pages", "arguments": {}}},  # three responses
            {"message": "Done."},
        ]
    )
    reported = Reported()
    driver = usage_driver(state_dir, fake, reported)
    try:
        result = await bounded(driver.run_turn(turn(fake, tmp_path, tool_server), Events()))
    finally:
        await driver.close()

    assert result.status == "completed", result.error
    fake_sent = sent(fake)
    assert len(fake_sent) == 5  # a tool call, three pages, a message: five responses
    assert [counts(u) for u in reported] == fake_sent
    assert counts(reported[0]) == {**mine, "reasoning_tokens": 0}
    # Each response once, under a key of its turn; Codex gives no cost: the control plane prices.
    assert len({u.key for u in reported}) == 5
    assert {u.key.split(":")[0] for u in reported} == {result.provider_turn_id}
    assert {(u.model, u.cost_micros, u.currency) for u in reported} == {
        ("scripted-model", None, "USD")
    }


async def test_a_resumed_thread_replays_its_last_usage_which_is_not_reported_again(
    fake: FakeCodex, tool_server: ToolServer, state_dir: Path, tmp_path: Path
) -> None:
    fake.script({"turns": [[{"message": "First."}], [{"message": "Second."}]]})
    first_reported, second_reported = Reported(), Reported()
    first = usage_driver(state_dir, fake, first_reported)
    try:
        done = await bounded(first.run_turn(turn(fake, tmp_path, tool_server), Events()))
    finally:
        await first.close()
    assert done.status == "completed", done.error

    # Another process (a runner restart, or the task's next run) resumes the thread.
    events = Events()
    second = usage_driver(state_dir, fake, second_reported)
    try:
        again = await bounded(
            second.run_turn(turn(fake, tmp_path, tool_server, done.session_ref), events)
        )
    finally:
        await second.close()
    assert again.status == "completed", again.error

    # Codex sends the thread's last usage again, of the earlier turn, before the new turn.
    usages = [e.payload for e in events.items if e.type == "thread/tokenUsage/updated"]
    replay, own = usages
    assert replay["turnId"] == done.provider_turn_id
    assert events.types().index("thread/tokenUsage/updated") < events.types().index("turn/started")
    # Read again, it is the same usage under the same key; it is not reported again.
    assert turn_usage(replay, "scripted-model") == first_reported[-1]
    assert [u.key for u in second_reported] == [turn_usage(own, "scripted-model").key]
    assert [counts(u) for u in first_reported + second_reported] == sent(fake)
    # The thread's running total carried over to the new process.
    assert own["tokenUsage"]["total"]["inputTokens"] == sum(s["input_tokens"] for s in sent(fake))


async def test_the_same_response_is_reported_once_by_a_driver() -> None:
    reported = Reported()

    class Context:
        report_usage = reported

    reports = UsageReports(Context())  # type: ignore[arg-type]
    usage = TurnUsage(key="turn-1:1200", model="m", input_tokens=1000, output_tokens=200)
    await reports.send(usage)
    await reports.send(dataclasses.replace(usage))
    await reports.send(None)
    assert reported == [usage]


async def test_a_runner_of_an_older_hook_api_gets_no_usage_and_the_turn_runs(
    fake: FakeCodex, tool_server: ToolServer, state_dir: Path, tmp_path: Path
) -> None:
    class OldContext:  # a DriverContext of hook API 1.7: no report_usage attribute at all
        state_dir = str(tmp_path / "old")
        env = driver_context(tmp_path, ()).env
        command = fake.command()
        report_session = None

    fake.script([{"message": "Done."}])
    driver = CodexDriver(OldContext())  # type: ignore[arg-type]
    try:
        result = await bounded(driver.run_turn(turn(fake, tmp_path, tool_server), Events()))
    finally:
        await driver.close()
    assert result.status == "completed", result.error
    assert len(fake.entries("usage")) == 1
