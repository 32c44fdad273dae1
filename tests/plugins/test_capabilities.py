"""Provider capabilities are honoured: the API shows them per agent, the control plane puts the
standing rules where the provider carries them, the runner gives tools, sessions and steers only
to kinds that declare them."""

from __future__ import annotations

import types
import uuid
from pathlib import Path

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import (
    Lane,
    ProviderCarriers,
    SessionAttempt,
    TaskSource,
    WakeSource,
)
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind, TurnResult

from paperclip.engine.context.prompt import carriers_of
from paperclip.prompts import AssemblyRequest, assemble_execution_input
from paperclip.prompts.rules import DEFAULT_RULES
from paperclip.runner.capabilities import may_steer, turn_input
from paperclip.wire import messages as wire


class IdleDriver:
    async def run_turn(self, turn, emit):
        return TurnResult("completed")

    async def steer(self, message_id, text):
        return True

    async def interrupt(self):
        return None

    async def close(self):
        return None


def kind(name: str, **capabilities: bool) -> ProviderKind:
    return ProviderKind(
        name=name,
        capabilities=ProviderCapabilities(**capabilities),
        create_driver=lambda context: IdleDriver(),
    )


def plugin(*kinds: ProviderKind) -> types.SimpleNamespace:
    @hookimpl
    def paperclip_providers():
        return list(kinds)

    return types.SimpleNamespace(paperclip_providers=paperclip_providers)


def start_turn(**fields) -> wire.StartTurn:
    return wire.StartTurn(
        seq=1,
        run_id=uuid.uuid4(),
        provider="p",
        token="run-token",
        prompt="Fix it",
        system="rules",
        session_ref="session-1",
        issue_id=uuid.uuid4(),
        **fields,
    )


async def test_paperclip_providers_capabilities_are_shown_on_each_agent(
    paperclip_client, paperclip_register_plugin
):
    paperclip_register_plugin(
        plugin(kind("steering", steer=True, mcp_tools=True, system_prompt=True)), name="steering"
    )
    company = (
        await paperclip_client.post("/api/companies", json={"name": "Acme", "issue_prefix": "ACM"})
    ).json()
    created = await paperclip_client.post(
        f"/api/companies/{company['id']}/agents", json={"name": "a", "provider": "steering"}
    )
    assert created.status_code == 201, created.text
    expected = {
        "steer": True,
        "follow_up": False,
        "resume": False,
        "mcp_tools": True,
        "fresh_retry": False,
        "system_prompt": True,
    }
    assert created.json()["capabilities"] == expected
    listed = (await paperclip_client.get(f"/api/companies/{company['id']}/agents")).json()["items"]
    assert [a["capabilities"] for a in listed] == [expected]


def test_paperclip_providers_system_prompt_carries_the_rules(
    paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(
        plugin(kind("carrier", system_prompt=True), kind("plain")), name="kinds"
    )
    assert carriers_of(paperclip_plugin_host, "carrier") == ProviderCarriers(default_rules=True)
    assert carriers_of(paperclip_plugin_host, "plain") == ProviderCarriers(default_rules=False)
    assert carriers_of(paperclip_plugin_host, "not-installed") == ProviderCarriers(
        default_rules=False
    )


def test_the_rules_go_to_the_system_carrier_or_the_prompt(
    paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(
        plugin(kind("carrier", system_prompt=True), kind("plain")), name="kinds"
    )
    task = TaskSource(id="t1", identifier="ACM-1", title="Fix the build")
    for name, in_system in (("carrier", True), ("plain", False)):
        assembled = assemble_execution_input(
            AssemblyRequest(
                task=task,
                wake=WakeSource(reason="assignment"),
                lane=Lane.NATIVE,
                attempt=SessionAttempt.FRESH,
                provider=name,
                carriers=carriers_of(paperclip_plugin_host, name),
            ),
            paperclip_plugin_host,
        )
        assert (DEFAULT_RULES in (assembled.system or "")) is in_system
        assert (DEFAULT_RULES in assembled.prompt) is not in_system


def test_the_runner_gives_tools_and_sessions_only_to_kinds_that_declare_them(tmp_path: Path):
    message = start_turn()
    bare = turn_input(kind("bare"), message, tmp_path, "http://127.0.0.1:1/mcp")
    assert bare.mcp is None and bare.session_ref is None
    assert bare.issue_id == str(message.issue_id) and bare.system == "rules"

    full = turn_input(kind("full", mcp_tools=True, resume=True), message, tmp_path, "http://x/mcp")
    assert full.mcp is not None and full.mcp.bearer_token == "run-token"
    assert full.mcp.url == "http://x/mcp" and full.session_ref == "session-1"


def test_a_steer_reaches_only_a_driver_that_can_take_one():
    assert not may_steer(None)
    assert not may_steer(kind("plain", resume=True))
    assert may_steer(kind("steer", steer=True))
    assert may_steer(kind("queue", follow_up=True))
