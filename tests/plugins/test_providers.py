"""``paperclip_providers``: registration, lookup, and the driver a kind creates."""

from __future__ import annotations

import types

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.providers import (
    DriverContext,
    ProviderCapabilities,
    ProviderEvent,
    ProviderKind,
    TurnInput,
    TurnResult,
)

from paperclip.plugin_host import PluginConflictError, PluginLoadError, ProviderNotInstalledError


class EchoDriver:
    """Answers every prompt with itself, as one event."""

    async def run_turn(self, turn, emit):
        await emit(ProviderEvent("agent_message", {"text": turn.prompt}))
        return TurnResult("completed", session_ref="echo-session")

    async def steer(self, message_id, text):
        return False

    async def interrupt(self):
        return None

    async def close(self):
        return None


def echo_plugin(name: str = "echo") -> types.SimpleNamespace:
    @hookimpl
    def paperclip_providers():
        return [
            ProviderKind(
                name=name,
                capabilities=ProviderCapabilities(resume=True),
                create_driver=lambda ctx: EchoDriver(),
            )
        ]

    return types.SimpleNamespace(paperclip_providers=paperclip_providers)


async def test_paperclip_providers_registers_a_kind_whose_driver_runs_a_turn(
    paperclip_plugin_host, paperclip_register_plugin, tmp_path
):
    paperclip_register_plugin(echo_plugin(), name="echo")

    kind = paperclip_plugin_host.provider("echo")
    assert kind.capabilities == ProviderCapabilities(resume=True)
    events: list[ProviderEvent] = []

    async def emit(event: ProviderEvent) -> None:
        events.append(event)

    driver = kind.create_driver(DriverContext(state_dir=str(tmp_path)))
    result = await driver.run_turn(TurnInput(run_id="r", prompt="hello", cwd=str(tmp_path)), emit)
    assert result.status == "completed"
    assert events == [ProviderEvent("agent_message", {"text": "hello"})]


def test_paperclip_providers_a_missing_kind_is_a_clear_409(
    paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(echo_plugin(), name="echo")
    with pytest.raises(ProviderNotInstalledError) as raised:
        paperclip_plugin_host.provider("codex")
    error = raised.value
    assert (error.status_code, error.code) == (409, "provider_not_installed")
    assert error.message == (
        "no installed plugin provides the provider 'codex' (installed: echo); "
        "install its plugin (e.g. paperclip-codex) and restart"
    )


def test_paperclip_providers_are_listed_from_every_plugin(
    paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(echo_plugin("one"), name="one")
    paperclip_register_plugin(echo_plugin("two"), name="two")
    assert sorted(k.name for k in paperclip_plugin_host.providers()) == ["one", "two"]


def test_paperclip_providers_conflict_names_both_plugins(
    paperclip_plugin_host, paperclip_register_plugin
):
    paperclip_register_plugin(echo_plugin(), name="first")
    paperclip_register_plugin(echo_plugin(), name="second")
    with pytest.raises(
        PluginConflictError,
        match=r"^provider kind 'echo' is registered by both plugin 'first' .* and plugin 'second'",
    ):
        paperclip_plugin_host.providers()


def test_paperclip_providers_unregistered_at_teardown(
    paperclip_plugin_host, paperclip_register_plugin
):
    record = paperclip_register_plugin(echo_plugin(), name="echo")
    assert record.hooks == ("paperclip_providers",)
    paperclip_plugin_host.unregister("echo")
    assert paperclip_plugin_host.providers() == []
    # The fixture's own teardown tolerates a plugin the test already removed.


def test_paperclip_providers_an_implementation_with_unknown_arguments_is_refused(
    paperclip_register_plugin,
):
    @hookimpl
    def paperclip_providers(settings):
        return []

    with pytest.raises(PluginLoadError) as raised:
        paperclip_register_plugin(
            types.SimpleNamespace(paperclip_providers=paperclip_providers), name="bad"
        )
    assert str(raised.value) == (
        "plugin 'bad' (registered in process) was not registered: "
        "Plugin 'bad' for hook 'paperclip_providers'; "
        "hookimpl definition: paperclip_providers(settings); "
        "Argument(s) {'settings'} are declared in the hookimpl but can not be found in the hookspec"
    )
