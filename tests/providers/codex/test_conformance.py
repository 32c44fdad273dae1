"""The fake app-server agrees with the real Codex CLI on what the driver reads.

One scenario (a read-only tool, an unannotated tool, an escalated shell
command, a closing message) runs under approval policies ``never`` and
``on-request`` with Codex's own tool gate (``tool_approval: auto``), and
another commits in a git worktree (refused in the sandbox, which keeps the
worktree's git folder read-only; then escalated and accepted), through the
real driver, against:

- the fake app-server (always), and
- the pinned real CLI with the scripted model (where it is installed).

Both are reduced to the messages the driver reads (kinds, item types and
statuses, tool names, refusal texts, the fields it takes from each, where each
response's token usage comes) and compared with the recording of the real CLI
in ``data/`` (made with ``PAPERCLIP_RECORD_CODEX=1``). A fake that stops
gating tools, or a CLI version that changes a shape, fails here. The usage the
driver reports is, response by response, what the model sent: the scripted
endpoint's for the real CLI, the fake's own (its log) for the fake. A third
scenario resumes the thread in a new process: Codex replays the thread's last
usage, of the earlier turn, which the driver must not report again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("paperclip_codex", reason="the codex plugin is not installed (tox env core)")

from mcp.types import ToolAnnotations
from paperclip_codex.driver import CodexDriver
from paperclip_hookspecs.providers import (
    DriverContext,
    McpEndpoint,
    ProviderEvent,
    TurnInput,
)
from paperclip_provider_kit.testing import Reported, counts
from paperclip_provider_kit.testing.conformance import check_recording, serve_tools
from paperclip_provider_kit.usage import COUNTS

from tests.providers.codex.cli import PINNED, require_cli
from tests.providers.codex.conftest import real_agent_config
from tests.support.git_repos import IDENTITY, git, make_repo
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import calls, codex_shell, mcp_tool, say

try:  # mcp 2
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef]

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

DATA = Path(__file__).with_name("data")
SERVER = "tools"
WAIT = 60.0
READ_KINDS = {
    "thread/started",
    "turn/started",
    "item/started",
    "item/completed",
    "turn/completed",
    "error",
    "serverRequest/resolved",
    "mcpServer/elicitation/request",
    "item/commandExecution/requestApproval",
    "thread/tokenUsage/updated",
}
"""The messages the driver and the engine read; status chatter is left out."""


def recording(policy: str) -> Path:
    return DATA / f"codex-{PINNED}-{policy}.json"


@pytest.fixture
async def tool_server() -> AsyncIterator[str]:
    """Two tools on 127.0.0.1: ``lookup`` says it is read-only, ``echo`` says nothing."""
    mcp = MCPServer("conformance-tools")

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def lookup() -> str:
        """Read something."""
        return "found"

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text (no annotations: Codex treats it as a risky write)."""
        return f"echo: {text}"

    async with serve_tools(mcp) as url:
        yield url


FAKE_SCRIPT = [
    {"call_tool": {"name": "lookup", "arguments": {}}},
    {"call_tool": {"name": "echo", "arguments": {"text": "hi"}}},
    {"shell": {"command": "touch /etc/paperclip-conformance", "escalate": True}},
    {"message": "done"},
]
MODEL_SCRIPT = [
    calls(mcp_tool("lookup", {}, SERVER)),
    calls(mcp_tool("echo", {"text": "hi"}, SERVER)),
    calls(codex_shell("touch /etc/paperclip-conformance", escalate=True)),
    say("done"),
]


def fake_sent(log: Path) -> list[dict[str, int]]:
    """The usage the fake sent, response by response (its log)."""
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [{key: e[key] for key in COUNTS} for e in entries if e["type"] == "usage"]


def fake_command(scripts: Path, log: Path) -> tuple[str, ...]:
    module = "paperclip_codex_testing.fake_app_server"
    return (sys.executable, "-m", module, "--script-dir", str(scripts), "--log", str(log))


async def run_scenario(
    command: tuple[str, ...],
    url: str,
    tmp: Path,
    policy: str,
    config: dict[str, Any],
    cwd: Path | None = None,
    reported: Reported | None = None,
    session_ref: str | None = None,
) -> list[ProviderEvent]:
    events: list[ProviderEvent] = []

    async def emit(event: ProviderEvent) -> None:
        events.append(event)

    plugin_root = Path(sys.modules["paperclip_codex"].__file__ or "").parent.parent
    env = {
        "PYTHONPATH": str(plugin_root),
        "HOME": str(tmp),
        "SCRIPTED_MODEL_API_KEY": "dummy",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        **IDENTITY,
    }
    context = DriverContext(state_dir=str(tmp / "state"), env=env, command=command)
    driver = CodexDriver(dataclasses.replace(context, report_usage=reported))
    turn = TurnInput(
        run_id="conformance",
        prompt="Run the conformance scenario.",
        cwd=str(cwd or tmp),
        session_ref=session_ref,
        mcp=McpEndpoint(name=SERVER, url=url, bearer_token="unused"),
        config={
            "approval_policy": policy,
            "tool_approval": "auto",
            "request_timeout_seconds": WAIT,
            **config,
        },
    )
    try:
        result = await asyncio.wait_for(driver.run_turn(turn, emit), WAIT)
    finally:
        await driver.close()
    assert result.status == "completed", result.error
    return events


def reduce(events: list[ProviderEvent]) -> dict[str, Any]:
    """What the driver reads of a turn, in order, without ids, times or free text."""
    sequence = []
    turn_ids = {e.payload["turn"]["id"] for e in events if e.type == "turn/started"}
    running = dict.fromkeys(("inputTokens", "outputTokens"), 0)
    for event in events:
        if event.type not in READ_KINDS:
            continue
        entry: dict[str, Any] = {"kind": event.type}
        payload = dict(event.payload)
        item = payload.get("item")
        if isinstance(item, dict):
            entry["item"] = item.get("type")
            assert isinstance(item.get("id"), str)
            if event.type == "item/completed":
                entry["status"] = item.get("status")
            if item.get("type") == "mcpToolCall":
                entry["tool"] = [item["server"], item["tool"]]
                if event.type == "item/completed":
                    entry["error"] = (item.get("error") or {}).get("message")
                    entry["result"] = item.get("result") is not None
        if event.type == "turn/completed":
            turn = payload["turn"]
            entry["status"] = turn["status"]
            entry["items"] = [i["type"] for i in turn["items"]]
            assert "error" in turn and isinstance(turn["id"], str)
        if event.type == "thread/started":
            assert isinstance(payload["thread"]["id"], str)
        if event.type == "mcpServer/elicitation/request":
            entry["server"] = payload["serverName"]
            entry["approval_kind"] = payload["_meta"]["codex_approval_kind"]
            entry["tool_name"] = payload["_meta"]["tool_name"]
        if event.type == "item/commandExecution/requestApproval":
            entry["fields"] = sorted(
                {"itemId", "command", "cwd", "threadId", "turnId"} & set(payload)
            )
        if event.type == "serverRequest/resolved":
            entry["fields"] = sorted(payload)
        if event.type == "thread/tokenUsage/updated":
            usage = payload["tokenUsage"]
            entry["this_turn"] = payload["turnId"] in turn_ids  # else a replay of an earlier one
            entry["fields"] = sorted(usage["last"])
            if entry["this_turn"]:  # the thread's total runs on by the response's own (last)
                ran_on = {k: running[k] + usage["last"][k] for k in running}
                entry["total_runs_on"] = {k: usage["total"][k] for k in running} == ran_on
            running = {k: usage["total"][k] for k in running}
        # Streamed message deltas and reasoning are not part of the contract.
        if entry.get("item") in ("reasoning",):
            continue
        sequence.append(entry)
    startup = sorted(
        {e.payload.get("status") for e in events if e.type == "mcpServer/startupStatus/updated"}
    )
    return {"sequence": sequence, "startup": startup}


@pytest.mark.parametrize("policy", ["never", "on-request"])
async def test_the_fake_behaves_like_the_recorded_real_cli(
    tool_server: str, tmp_path: Path, policy: str
) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "conformance.json").write_text(json.dumps(FAKE_SCRIPT))
    log, reported = tmp_path / "fake.log", Reported()
    events = await run_scenario(
        fake_command(scripts, log),
        tool_server,
        tmp_path,
        policy,
        {"model": "conformance"},
        reported=reported,
    )
    expected = json.loads(recording(policy).read_text())
    assert reduce(events) == expected
    assert counts(reported) == fake_sent(log) and len(reported) == 4


@pytest.mark.codex_cli
@pytest.mark.parametrize("policy", ["never", "on-request"])
async def test_the_real_cli_behaves_as_recorded(
    tool_server: str, tmp_path: Path, policy: str
) -> None:
    cli = require_cli()
    with ModelEndpoint() as endpoint:
        endpoint.script("conformance", MODEL_SCRIPT)
        config = real_agent_config(endpoint, "conformance")
        reported = Reported()
        events = await run_scenario(
            (str(cli), "app-server"), tool_server, tmp_path, policy, config, reported=reported
        )
        sent = [u.as_dict() for u in endpoint.usage_sent("conformance")]
    reduced = reduce(events)
    check_recording(recording(policy), reduced, "PAPERCLIP_RECORD_CODEX")
    # Every response's usage reported once, as the model sent it.
    assert counts(reported) == sent and len(sent) == len(MODEL_SCRIPT)
    assert {u.model for u in reported} == {"conformance"}


# A commit in a git worktree: refused in the sandbox, then escalated and accepted.

COMMIT = "printf 'fixed\\n' > fix.txt && git add fix.txt && git commit -qm 'Fix it'"
WORKTREE_STEPS = [
    # Says how git failed and ends well: an item, whatever the machine's speed.
    f'{{ {COMMIT}; }} 2>&1; echo "git: $?"',
    # Fails: a sandbox denial (its item, if any, is left out: see without_slow_denials).
    COMMIT,
    f"{COMMIT} && git log --format=%s -1",  # escalated
]
WORKTREE_FAKE_SCRIPT = [
    {"shell": {"command": WORKTREE_STEPS[0]}},
    {"shell": {"command": WORKTREE_STEPS[1]}},
    {"shell": {"command": WORKTREE_STEPS[2], "escalate": True}},
    {"message": "done"},
]
WORKTREE_MODEL_SCRIPT = [
    calls(codex_shell(WORKTREE_STEPS[0])),
    calls(codex_shell(WORKTREE_STEPS[1])),
    calls(codex_shell(WORKTREE_STEPS[2], escalate=True, justification="Commit the fix.")),
    say("done"),
]
WORKTREE_CONFIG = {"sandbox": "workspace-write", "approvals": "approve"}


def worktree(tmp: Path) -> tuple[Path, Path]:
    """A repository and a worktree of it on branch ``feature``, as an issue gets one."""
    repo = make_repo(tmp / "repo")
    path = tmp / "wt"
    git(repo, "worktree", "add", "--quiet", "-b", "feature", str(path))
    return repo, path


def without_slow_denials(events: list[ProviderEvent]) -> list[ProviderEvent]:
    """The events without the item of a command the sandbox refused. Codex sends one only
    when the command outlived its 150 ms early-exit window (a failed item); a quicker
    refusal reaches the model with no item. Which of the two is the machine's speed."""
    refused = {
        item["id"]
        for e in events
        if e.type == "item/completed"
        and (item := e.payload.get("item") or {}).get("type") == "commandExecution"
        and item.get("status") == "failed"
        and "Read-only file system" in (item.get("aggregatedOutput") or "")
    }
    return [e for e in events if (e.payload.get("item") or {}).get("id") not in refused]


def reduce_worktree(events: list[ProviderEvent], tmp: Path, repo: Path) -> dict[str, Any]:
    """``reduce``, plus each command's ending and output, and the commits on the branch."""
    kept = without_slow_denials(events)
    commands = [
        {
            "source": item["source"],
            "exit_code": item["exitCode"],
            "output": (item["aggregatedOutput"] or "").replace(str(tmp), "<tmp>") or None,
        }
        for e in kept
        if e.type == "item/completed" and (item := e.payload["item"])["type"] == "commandExecution"
    ]
    branch = git(repo, "log", "--format=%s", "main..feature").splitlines()
    return {**reduce(kept), "commands": commands, "branch": branch}


async def test_the_fake_commits_in_a_worktree_like_the_recorded_real_cli(
    tool_server: str, tmp_path: Path
) -> None:
    repo, cwd = worktree(tmp_path)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "conformance.json").write_text(json.dumps(WORKTREE_FAKE_SCRIPT))
    command = fake_command(scripts, tmp_path / "fake.log")
    config = {"model": "conformance", **WORKTREE_CONFIG}
    events = await run_scenario(command, tool_server, tmp_path, "on-request", config, cwd)
    expected = json.loads(recording("worktree").read_text())
    assert reduce_worktree(events, tmp_path, repo) == expected


@pytest.mark.codex_cli
async def test_the_real_cli_commits_in_a_worktree_as_recorded(
    tool_server: str, tmp_path: Path
) -> None:
    cli = require_cli()
    repo, cwd = worktree(tmp_path)
    with ModelEndpoint() as endpoint:
        endpoint.script("conformance", WORKTREE_MODEL_SCRIPT)
        config = real_agent_config(endpoint, "conformance", **WORKTREE_CONFIG)
        events = await run_scenario(
            (str(cli), "app-server"), tool_server, tmp_path, "on-request", config, cwd
        )
    reduced = reduce_worktree(events, tmp_path, repo)
    check_recording(recording("worktree"), reduced, "PAPERCLIP_RECORD_CODEX")


# A thread resumed in a new process: Codex replays the thread's last usage (of the earlier
# turn) before the new turn starts; the driver reports only the new turn's.

RESUME_FAKE_SCRIPT = {"turns": [[{"message": "first"}], [{"message": "second"}]]}
RESUME_MODEL_SCRIPT = [say("first"), say("second")]


async def run_resume(
    command: tuple[str, ...], url: str, tmp: Path, config: dict[str, Any]
) -> tuple[list[ProviderEvent], Reported, Reported]:
    """Two turns of one thread, each in its own process; the second turn's events."""
    first, second = Reported(), Reported()
    started = await run_scenario(command, url, tmp, "never", config, reported=first)
    thread_id = next(e.payload["thread"]["id"] for e in started if e.type == "thread/started")
    events = await run_scenario(
        command, url, tmp, "never", config, reported=second, session_ref=thread_id
    )
    return events, first, second


async def test_the_fake_replays_a_resumed_thread_s_usage_like_the_recorded_real_cli(
    tool_server: str, tmp_path: Path
) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "conformance.json").write_text(json.dumps(RESUME_FAKE_SCRIPT))
    log = tmp_path / "fake.log"
    events, first, second = await run_resume(
        fake_command(scripts, log), tool_server, tmp_path, {"model": "conformance"}
    )
    assert reduce(events) == json.loads(recording("resume").read_text())
    assert counts(first + second) == fake_sent(log) and len(second) == 1


@pytest.mark.codex_cli
async def test_the_real_cli_replays_a_resumed_thread_s_usage_as_recorded(
    tool_server: str, tmp_path: Path
) -> None:
    cli = require_cli()
    with ModelEndpoint() as endpoint:
        endpoint.script("conformance", RESUME_MODEL_SCRIPT)
        config = real_agent_config(endpoint, "conformance")
        events, first, second = await run_resume(
            (str(cli), "app-server"), tool_server, tmp_path, config
        )
        sent = endpoint.usage_sent("conformance")
    reduced = reduce(events)
    check_recording(recording("resume"), reduced, "PAPERCLIP_RECORD_CODEX")
    assert counts(first + second) == [u.as_dict() for u in sent] and len(second) == 1
