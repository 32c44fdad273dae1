"""``paperclip runs tail`` reads every provider's protocol: the same run through the fake
OpenCode server, the fake Pi and the fake gateway (each speaking its real protocol, checked
against the real CLIs by the conformance tests) reads as the same transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from tests.engine.conftest import Stack
from tests.providers.scenarios import WAIT, fake_agent

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

SCRIPT = [
    {"call_tool": {"name": "get_task_context", "arguments": {}}},
    {"call_tool": {"name": "report_progress", "arguments": {"summary": "Reading the task"}}},
    {"call_tool": {"name": "post_comment", "arguments": {"body": "Looking at it."}}},
    {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "Fixed it"}}},
    {"message": "Done."},
]
TOOLS = ["get_task_context", "report_progress", "post_comment", "finish"]


@pytest.fixture
def stack(paperclip_database_url, tmp_path):
    stack = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    yield stack
    stack.stop()
    gateway = getattr(stack, "gateway", None)
    if gateway is not None:
        gateway.stop()


def model_config(model: str) -> dict:
    """A fake's agent: its model names its script (the URL and key are never used)."""
    return {
        "launch": "fake",
        "base_url": "http://127.0.0.1:9/v1",
        "model": model,
        "env_key": "SCRIPTED_MODEL_API_KEY",
    }


def start(stack: Stack, provider: str) -> dict:
    """The stack on the provider's fake; an agent playing SCRIPT with an issue to do."""
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    if provider == "opencode":
        from tests.providers.opencode.provider import OPENCODE

        OPENCODE.start_fake(stack)
        config = model_config(model)
    elif provider == "pi":
        from tests.providers.pi.provider import PI

        PI.start_fake(stack)
        config = model_config(model)
    else:
        from tests.providers.gateway.conftest import start_fake_gateway, start_stack

        start_stack(stack, start_fake_gateway(stack.tmp, stack.script_dir))
        config = {"agent_id": model}
    return fake_agent(stack, provider, SCRIPT, config, model)


@pytest.mark.parametrize("provider", ["opencode", "pi", "gateway"])
def test_the_transcript_of_each_provider(stack, provider):
    ctx = start(stack, provider)
    stack.assign(ctx)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCLIP_")}
    tail = subprocess.run(
        [
            *(sys.executable, "-m", "paperclip", "runs", "tail", ctx["issue"]["identifier"]),
            *("--company", ctx["company"]["id"], "--json"),  # each test's company is Acme (ACM)
        ],
        env={**clean, **stack.servers[0].client_env},
        capture_output=True,
        text=True,
        timeout=WAIT + 60,
    )
    assert tail.returncode == 0, tail.stderr
    entries = [json.loads(line) for line in tail.stdout.splitlines()]

    tools = [e for e in entries if e["kind"] == "tool"]
    assert [t["text"] for t in tools] == TOOLS, entries
    assert all("error" not in t["details"] for t in tools)
    assert all(isinstance(t["details"].get("duration_ms"), int) for t in tools)
    if provider != "gateway":  # a gateway's item events carry names, not arguments
        assert tools[2]["details"]["arguments"] == {"body": "Looking at it."}
        assert '"accepted": true' in tools[3]["details"]["result"]
    assert [e["text"] for e in entries if e["kind"] == "progress"] == ["Reading the task"]
    assert [e["text"] for e in entries if e["kind"] == "message"] == ["Done."]
    assert entries[-1]["kind"] == "end" and entries[-1]["text"] == "succeeded"
    assert any(e["kind"] == "turn" for e in entries)
    # One entry per thing that happened: far fewer than the events in the run's log.
    run = stack.runs(ctx)[0]
    assert len(entries) < len(stack.events(ctx, run["id"]))
