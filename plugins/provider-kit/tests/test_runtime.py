"""The kit's runtime pieces a provider builds on: probe, config checks, schema, turns,
process groups, usage reports and registration, with real processes where there are any."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import jsonschema
import pytest
from paperclip_hookspecs.providers import ProviderCapabilities, TurnResult
from paperclip_provider_kit import config, schema
from paperclip_provider_kit.errors import ErrorCode, TurnAborted
from paperclip_provider_kit.probe import CliProbe
from paperclip_provider_kit.process import SpawnError, Tail, exit_description, spawn, stop_group
from paperclip_provider_kit.registration import ModelAccess, endpoint_access, provider_kind
from paperclip_provider_kit.reports import TurnUsage, UsageReports, cost_micros, split_usage
from paperclip_provider_kit.turns import TurnGate

PROBE = CliProbe(
    plugin="demo",
    title="Demo",
    npm_package="demo-cli",
    supported="1.2.3",
    home_env=lambda home: {"DEMO_HOME": home},
)


def fake_cli(tmp_path: Path, version: str) -> str:
    path = tmp_path / "demo"
    path.write_text(
        f"#!{sys.executable}\nimport os\nprint('demo {version}', os.environ['DEMO_HOME'] != '')\n"
    )
    path.chmod(0o755)
    return str(path)


def test_the_probe_finds_a_cli_its_version_and_says_how_to_get_the_tested_one(tmp_path) -> None:
    same = PROBE.probe([fake_cli(tmp_path, "1.2.3")])
    other = PROBE.probe([fake_cli(tmp_path, "2.0.0")])
    missing = PROBE.probe(["no-such-demo-cli"])

    assert (same.found, same.version) == (True, "1.2.3")
    assert "docs/providers/demo.md" in same.hint and "tested with" not in same.hint
    assert "paperclip-demo is tested with Demo 1.2.3; this is 2.0.0" in other.hint
    assert not missing.found
    assert "`npm install -g demo-cli@1.2.3`" in missing.hint
    assert PROBE.probe([]).hint == "the launch profile has no command"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"launch": "a b"}, "launch must be a profile name"),
        ({"base_url": "file:///etc/passwd"}, "http(s) URL"),
        ({"env_key": "PAPERCLIP_API_KEY"}, "not a PAPERCLIP_ variable"),
        ({"model": "../x y"}, "model must be a model name"),
    ],
)
def test_the_model_endpoint_checks_refuse_what_an_agent_may_not_ask(given, message) -> None:
    with pytest.raises(config.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config.model_endpoint(given)


def test_config_checks_say_the_key_and_why() -> None:
    bounds = {"turn_timeout_seconds": (1.0, 10.0), "close_timeout_seconds": (0.1, 5.0)}
    assert config.timeouts({"turn_timeout_seconds": None, "close_timeout_seconds": 2}, bounds) == {
        "close_timeout_seconds": 2.0
    }
    with pytest.raises(config.ConfigError, match=r"between 0\.1 and 5 seconds"):
        config.timeouts({"close_timeout_seconds": 9}, bounds)
    with pytest.raises(config.ConfigError, match="a number of seconds"):
        config.timeouts({"close_timeout_seconds": True}, bounds)
    with pytest.raises(config.ConfigError, match="mode must be one of a, b; got 'c'"):
        config.choice("mode", "c", ("a", "b"))
    with pytest.raises(config.ConfigError, match=r"unknown demo config key\(s\): x; known: a.*!"):
        config.refuse_unknown("demo", {"x": 1, "a": 2}, {"a"}, "!")


def test_a_file_is_written_whole_or_not_at_all(tmp_path) -> None:
    path = config.write_atomic(tmp_path / "sub" / "demo.json", "{}")
    assert path.read_text() == "{}"
    assert [p.name for p in path.parent.iterdir()] == ["demo.json"]


def test_the_schema_pieces_match_the_checks() -> None:
    doc = schema.config_schema(
        "Demo",
        {
            "launch": schema.LAUNCH,
            "base_url": schema.base_url("where"),
            "model": schema.model("which"),
            "env_key": schema.ENV_KEY,
            "close_timeout_seconds": schema.seconds(
                {"close_timeout_seconds": (0.1, 5.0)}, "close_timeout_seconds", "grace"
            ),
        },
    )
    good = {
        "launch": "default",
        "base_url": "http://127.0.0.1:8000/v1",
        "model": "m",
        "env_key": "OPENAI_API_KEY",
    }
    jsonschema.validate(good, doc)
    config.model_endpoint(good)
    for bad in ({"env_key": "PAPERCLIP_API_KEY"}, {"close_timeout_seconds": 9}, {"other": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, doc)


async def test_the_turn_gate_runs_one_turn_at_a_time_and_none_after_close() -> None:
    gate = TurnGate()
    started, release = asyncio.Event(), asyncio.Event()

    async def turn() -> TurnResult:
        started.set()
        await release.wait()
        return TurnResult(status="succeeded", session_ref="s-1")

    async def aborted() -> TurnResult:
        raise TurnAborted(ErrorCode.SPAWN_FAILED, "cannot start")

    first = asyncio.create_task(gate.run("s-0", turn, lambda: None))
    await started.wait()
    busy = await gate.run("s-0", turn, lambda: None)
    release.set()
    done = await first
    failed = await gate.run("s-0", aborted, lambda: "s-9")
    gate.closed = True
    closed = await gate.run("s-0", turn, lambda: None)

    assert done.status == "succeeded"
    assert (busy.status, busy.error) == ("failed", "turn_in_progress: a turn is running")
    assert (failed.session_ref, failed.error) == ("s-9", "spawn_failed: cannot start")
    assert closed.error == "driver_closed: the driver is closed"
    assert not gate.running


async def test_a_process_group_is_described_and_stopped_with_what_it_started(tmp_path) -> None:
    child = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(child)!r}, 'w').write(str(p.pid)); "
        "print('ready', file=sys.stderr, flush=True); time.sleep(60)"
    )
    process = await spawn([sys.executable, "-c", script], env={}, cwd=str(tmp_path / "gone"))
    tail = Tail()
    assert process.stderr is not None
    tail.add(await process.stderr.readline())

    await stop_group(process, grace_seconds=5.0)

    assert process.returncode == -15
    assert await exit_description(process, "demo", tail.text()) == (
        "demo was killed by signal 15; stderr: ready"
    )
    pid = int(child.read_text())
    for _ in range(200):  # a signalled process is gone a moment after the signal
        if gone(pid):
            break
        await asyncio.sleep(0.05)
    assert gone(pid)
    with pytest.raises(SpawnError) as missing:
        await spawn(["no-such-demo-cli"], env={}, cwd=None)
    assert missing.value.missing


def gone(pid: int) -> bool:
    """No process ``pid``, or only its exit status left (reparented, not reaped yet)."""
    status = Path(f"/proc/{pid}/status")
    return not status.exists() or "zombie" in status.read_text()


class Context:
    def __init__(self) -> None:
        self.sent: list[object] = []

    async def report_usage(self, usage: object) -> None:
        self.sent.append(usage)


async def test_usage_is_reported_once_per_key_and_never_when_empty() -> None:
    context = Context()
    reports = UsageReports(context)  # type: ignore[arg-type]
    usage = split_usage(
        "m-1",
        "demo",
        {"input": 10, "cacheRead": 5, "cacheWrite": 1, "output": 7, "cost": {"total": 0.25}},
    )
    empty = split_usage("m-2", "demo", {"input": 0, "output": 0})

    for item in (usage, usage, empty):
        await reports.send(item)

    assert context.sent == [usage]
    assert (usage.input_tokens, usage.cached_input_tokens, usage.cost_micros) == (16, 5, 250_000)
    assert cost_micros(0) is None and cost_micros(True) is None
    assert TurnUsage is not None


def test_a_kind_carries_model_access_where_the_hook_api_has_it() -> None:
    kind = provider_kind(
        name="demo",
        capabilities=ProviderCapabilities(),
        create_driver=lambda context: None,  # type: ignore[arg-type, return-value]
        description="demo",
        config_schema={},
        launch={"default": ("demo",)},
        probe=PROBE.probe,
        model_access=lambda config: endpoint_access(config.get("base_url"), "DEMO_API_KEY"),
    )
    access = kind.model_access({})  # type: ignore[attr-defined]
    assert ModelAccess is not None
    assert (access.endpoints, access.keys) == (("builtin",), ("DEMO_API_KEY",))
