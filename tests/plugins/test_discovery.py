"""Discovery of installed plugins, with fake installed distributions: each outcome and its message."""

from __future__ import annotations

import logging
import sys

import pytest
from paperclip_hookspecs import HOOK_API, hookimpl
from paperclip_hookspecs.prompts import TaskMarkdownOptions, TaskSource

from paperclip.app import create_app
from paperclip.plugin_host import (
    PluginConflictError,
    PluginHookError,
    PluginHost,
    PluginLoadError,
    PluginStatus,
    SkipCode,
)
from paperclip.plugin_host.builtin import BUILTIN_PLUGINS
from paperclip.settings import Settings
from tests.plugins.fakes import FakeSite, policy_module, provider_module
from tests.plugins.samples import conversation_turn


def discover(tmp_path, **settings) -> PluginHost:
    return PluginHost.from_settings(Settings(data_dir=tmp_path / "data", **settings))


def record(host: PluginHost, name: str):
    [found] = [r for r in host.records() if r.name == name]
    return found


def skip_lines(caplog: pytest.LogCaptureFixture, dist: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("paperclip.plugin_host") and dist in r.getMessage()
    ]


def test_an_installed_plugin_loads_after_the_builtins(fake_site: FakeSite, tmp_path):
    fake_site.install(
        "paperclip-alpha",
        "2.3.4",
        entry_points={"alpha": "alpha_plugin"},
        modules={"alpha_plugin": provider_module("alpha-kind")},
    )
    host = discover(tmp_path)

    alpha = record(host, "alpha")
    assert alpha.status is PluginStatus.LOADED
    assert (alpha.distribution, alpha.version, alpha.entry_point) == (
        "paperclip-alpha",
        "2.3.4",
        "alpha_plugin",
    )
    assert alpha.hooks == ("paperclip_providers",)
    assert alpha.hook_api == ">=1.0,<2"
    assert not alpha.builtin and alpha.reason is None
    names = [r.name for r in host.records()]
    builtins = [name for name, _ in BUILTIN_PLUGINS]
    assert names[: len(builtins)] == builtins
    assert names.index("alpha") >= len(builtins)
    assert host.provider("alpha-kind").name == "alpha-kind"
    host.check_pending()


def test_a_plugin_that_fails_to_import_is_skipped_with_one_log_line(
    fake_site: FakeSite, tmp_path, caplog
):
    fake_site.install(
        "paperclip-broken",
        "0.1.0",
        entry_points={"broken": "broken_plugin"},
        modules={"broken_plugin": "import a_dependency_that_is_not_installed\n"},
    )
    with caplog.at_level(logging.INFO, logger="paperclip.plugin_host"):
        host = discover(tmp_path)

    broken = record(host, "broken")
    assert broken.status is PluginStatus.SKIPPED
    assert broken.code is SkipCode.IMPORT_ERROR
    assert broken.reason == (
        "import of broken_plugin failed: ModuleNotFoundError: "
        "No module named 'a_dependency_that_is_not_installed'"
    )
    [line] = skip_lines(caplog, "paperclip-broken")
    assert line == f"plugin 'broken' (paperclip-broken 0.1.0) skipped: {broken.reason}"
    host.check_pending()  # not strict: the server starts without it


def test_a_plugin_that_raises_on_import_is_skipped(fake_site: FakeSite, tmp_path):
    fake_site.install(
        "paperclip-raises",
        entry_points={"raises": "raises_plugin"},
        modules={"raises_plugin": "raise RuntimeError('no config')\n"},
    )
    assert record(discover(tmp_path), "raises").reason == (
        "import of raises_plugin failed: RuntimeError: no config"
    )


@pytest.mark.parametrize("blocked", ["gamma", "paperclip-gamma", "Paperclip_Gamma"])
def test_a_disabled_plugin_is_not_imported(fake_site: FakeSite, tmp_path, blocked):
    fake_site.install(
        "paperclip-gamma",
        entry_points={"gamma": "gamma_plugin"},
        modules={"gamma_plugin": provider_module("gamma")},
    )
    host = discover(tmp_path, plugins_disable=[blocked])

    gamma = record(host, "gamma")
    assert (gamma.status, gamma.code) == (PluginStatus.SKIPPED, SkipCode.DISABLED)
    assert gamma.reason == "disabled by PAPERCLIP_PLUGINS_DISABLE"
    assert "gamma_plugin" not in sys.modules
    assert not gamma.failed  # an operator's choice, not a failure: strict mode accepts it


def test_a_builtin_can_be_disabled(tmp_path):
    host = discover(tmp_path, plugins_disable=["presentation"])
    presentation = record(host, "presentation")
    assert (presentation.status, presentation.code) == (PluginStatus.SKIPPED, SkipCode.DISABLED)


def test_only_lists_the_installed_plugins_allowed(fake_site: FakeSite, tmp_path):
    for name in ("delta", "epsilon"):
        fake_site.install(
            f"paperclip-{name}",
            entry_points={name: f"{name}_plugin"},
            modules={f"{name}_plugin": provider_module(name)},
        )
    host = discover(tmp_path, plugins_only=["delta"])

    assert record(host, "delta").status is PluginStatus.LOADED
    epsilon = record(host, "epsilon")
    assert (epsilon.code, epsilon.reason) == (
        SkipCode.NOT_ALLOWED,
        "not listed in PAPERCLIP_PLUGINS_ONLY",
    )
    # The allow list is about installed plugins; built-ins stay.
    assert all(r.status is PluginStatus.LOADED for r in host.records() if r.builtin)


def test_a_plugin_for_a_newer_hook_api_is_refused(fake_site: FakeSite, tmp_path, caplog):
    major, minor, _ = (int(part) for part in HOOK_API.split("."))
    newer = f">={major}.{minor + 1},<{major + 1}"  # the next minor: not yet released
    fake_site.install(
        "paperclip-future",
        "3.0.0",
        entry_points={"future": "future_plugin"},
        modules={"future_plugin": provider_module("future")},
        requires=[f"paperclip-hookspecs{newer}"],
    )
    with caplog.at_level(logging.INFO, logger="paperclip.plugin_host"):
        host = discover(tmp_path)

    future = record(host, "future")
    assert (future.status, future.code) == (PluginStatus.SKIPPED, SkipCode.INCOMPATIBLE_HOOK_API)
    assert future.hook_api == newer
    assert future.reason == (
        f"requires paperclip-hookspecs{newer}, but the running hook API is {HOOK_API}"
    )
    assert "future_plugin" not in sys.modules
    [line] = skip_lines(caplog, "paperclip-future")
    assert f"skipped: requires paperclip-hookspecs{newer}" in line


def test_a_plugin_for_an_older_major_is_refused(fake_site: FakeSite, tmp_path):
    fake_site.install(
        "paperclip-ancient",
        entry_points={"ancient": "ancient_plugin"},
        modules={"ancient_plugin": provider_module("ancient")},
        requires=["paperclip-hookspecs>=0.3,<1"],
    )
    assert record(discover(tmp_path), "ancient").code is SkipCode.INCOMPATIBLE_HOOK_API


def test_a_plugin_without_a_hook_api_requirement_is_refused(fake_site: FakeSite, tmp_path):
    fake_site.install(
        "paperclip-loose",
        entry_points={"loose": "loose_plugin"},
        modules={"loose_plugin": provider_module("loose")},
        # A requirement behind an extra is not a runtime requirement.
        requires=["httpx>=0.27", 'paperclip-hookspecs>=1.0,<2; extra == "test"'],
    )
    loose = record(discover(tmp_path), "loose")
    assert loose.code is SkipCode.NO_HOOK_API_REQUIREMENT
    assert loose.reason is not None
    assert loose.reason.startswith("declares no requirement on paperclip-hookspecs")


def test_a_plugin_implementing_an_unknown_hook_is_refused(fake_site: FakeSite, tmp_path):
    fake_site.install(
        "paperclip-typo",
        entry_points={"typo": "typo_plugin"},
        modules={
            "typo_plugin": """
                from paperclip_hookspecs import hookimpl

                @hookimpl
                def paperclip_provider():
                    return []
                """
        },
    )
    host = discover(tmp_path)
    typo = record(host, "typo")
    assert (typo.code, typo.reason) == (
        SkipCode.INVALID,
        f"implements paperclip_provider, which hook API {HOOK_API} does not define",
    )
    host.check_pending()  # it was never left registered


def test_a_second_plugin_with_a_taken_entry_point_name_is_skipped(fake_site: FakeSite, tmp_path):
    for dist in ("paperclip-one", "paperclip-two"):
        module = dist.replace("-", "_")
        fake_site.install(
            dist, entry_points={"same": module}, modules={module: provider_module(module)}
        )
    host = discover(tmp_path)
    same = [r for r in host.records() if r.name == "same"]
    assert [r.status for r in same] == [PluginStatus.LOADED, PluginStatus.SKIPPED]
    assert same[1].reason == "the name is taken by plugin 'same' (paperclip-one 1.0.0)"


def test_two_plugins_with_one_provider_name_are_an_error_naming_both(fake_site: FakeSite, tmp_path):
    fake_site.install(
        "paperclip-left",
        "1.0.0",
        entry_points={"left": "left_plugin"},
        modules={"left_plugin": provider_module("twin")},
    )
    fake_site.install(
        "paperclip-right",
        "2.0.0",
        entry_points={"right": "right_plugin"},
        modules={"right_plugin": provider_module("twin")},
    )
    host = discover(tmp_path)

    with pytest.raises(PluginConflictError) as raised:
        host.check_pending()
    assert str(raised.value) == (
        "provider kind 'twin' is registered by both plugin 'left' (paperclip-left 1.0.0) "
        "and plugin 'right' (paperclip-right 2.0.0); "
        "uninstall one, or disable it with PAPERCLIP_PLUGINS_DISABLE"
    )
    assert host.problems() == (str(raised.value),)
    with pytest.raises(PluginConflictError):
        host.providers()
    with pytest.raises(PluginConflictError):  # the server does not start with it
        create_app(Settings(data_dir=tmp_path / "data"), host)
    assert discover(tmp_path, plugins_disable=["right"]).provider("twin")


def test_two_plugins_with_one_policy_name_are_an_error_naming_both(fake_site: FakeSite, tmp_path):
    fake_site.install(
        "paperclip-holds",
        entry_points={"holds": "holds_plugin"},
        modules={"holds_plugin": policy_module("forked_cleanup_hold")},
    )
    fake_site.install(
        "paperclip-holds-fork",
        "0.2.0",
        entry_points={"holds-fork": "holds_fork_plugin"},
        modules={"holds_fork_plugin": policy_module("forked_cleanup_hold")},
    )
    host = discover(tmp_path)

    with pytest.raises(PluginConflictError) as raised:
        host.recovery_policies()
    message = str(raised.value)
    assert message.startswith("recovery policy 'forked_cleanup_hold'")
    assert "plugin 'holds' (paperclip-holds 1.0.0)" in message
    assert "plugin 'holds-fork' (paperclip-holds-fork 0.2.0)" in message


def test_a_plugin_that_raises_in_a_hook_is_named_in_the_log_and_the_error(
    fake_site: FakeSite, tmp_path, caplog
):
    fake_site.install(
        "paperclip-faulty",
        "0.9.1",
        entry_points={"faulty": "faulty_plugin"},
        modules={
            "faulty_plugin": """
                from paperclip_hookspecs import hookimpl

                def _explode():
                    raise ValueError("bad turn")

                @hookimpl
                def paperclip_decide_presentation(turn):
                    _explode()

                @hookimpl
                def paperclip_providers():
                    raise KeyError("kinds")
                """
        },
    )
    host = discover(tmp_path)

    with caplog.at_level(logging.ERROR, logger="paperclip.plugin_host"):
        with pytest.raises(PluginHookError) as raised:
            host.decide_presentation(turn=None)  # type: ignore[arg-type]
    error = raised.value
    assert (error.hook, error.plugin, error.distribution, error.version) == (
        "paperclip_decide_presentation",
        "faulty",
        "paperclip-faulty",
        "0.9.1",
    )
    assert str(error) == (
        "plugin 'faulty' (paperclip-faulty 0.9.1) raised in paperclip_decide_presentation: "
        "ValueError: bad turn"
    )
    assert isinstance(error.__cause__, ValueError)
    # Errors only: an earlier test of the same process may have set the app's INFO logging,
    # and discovery's "plugins loaded" line is not what this test is about.
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [str(error)]

    with pytest.raises(
        PluginHookError, match=r"paperclip-faulty 0\.9\.1\) raised in paperclip_providers"
    ):
        host.providers()
    assert any("paperclip-faulty 0.9.1" in p for p in host.problems())


def test_a_plugin_returning_the_wrong_type_is_named(fake_site: FakeSite, tmp_path):
    fake_site.install(
        "paperclip-sloppy",
        entry_points={"sloppy": "sloppy_plugin"},
        modules={
            "sloppy_plugin": """
                from paperclip_hookspecs import hookimpl

                @hookimpl
                def paperclip_providers():
                    return ["codex"]
                """
        },
    )
    with pytest.raises(PluginHookError) as raised:
        discover(tmp_path).providers()
    assert str(raised.value) == (
        "plugin 'sloppy' (paperclip-sloppy 1.0.0) returned str from paperclip_providers, "
        "expected a ProviderKind with a name"
    )


def test_strict_mode_stops_startup_on_a_plugin_that_did_not_load(fake_site: FakeSite, tmp_path):
    fake_site.install(
        "paperclip-broken",
        "0.1.0",
        entry_points={"broken": "broken_strict_plugin"},
        modules={"broken_strict_plugin": "import a_dependency_that_is_not_installed\n"},
    )
    settings = Settings(data_dir=tmp_path / "data", plugins_strict=True)
    host = PluginHost.from_settings(settings)  # discovery itself never raises

    with pytest.raises(PluginLoadError) as raised:
        create_app(settings, host)
    assert str(raised.value) == (
        "strict mode (PAPERCLIP_PLUGINS_STRICT): not loaded: "
        "plugin 'broken' (paperclip-broken 0.1.0): import of broken_strict_plugin failed: "
        "ModuleNotFoundError: No module named 'a_dependency_that_is_not_installed'"
    )
    # A plugin the operator disabled is a choice, not a failure: strict mode starts.
    PluginHost.from_settings(
        Settings(data_dir=tmp_path / "data", plugins_strict=True, plugins_disable=["broken"])
    ).check_pending()


def test_an_installed_plugin_is_asked_before_the_builtin(fake_site: FakeSite, tmp_path):
    fake_site.install(
        "paperclip-quiet",
        entry_points={"quiet": "quiet_plugin"},
        modules={
            "quiet_plugin": """
                from paperclip_hookspecs import hookimpl
                from paperclip_hookspecs.presentation import PresentationDecision

                @hookimpl
                def paperclip_decide_presentation(turn):
                    return PresentationDecision.none("quiet_chat")
                """
        },
    )
    assert discover(tmp_path).decide_presentation(conversation_turn()).reason == "quiet_chat"


def test_a_prompt_plugin_that_raises_is_named_too(paperclip_plugin_host, paperclip_register_plugin):
    class Exploding:
        @hookimpl
        def paperclip_render_task_markdown(self, task, options):
            raise RuntimeError("template missing")

    paperclip_register_plugin(Exploding(), name="exploding")
    with pytest.raises(PluginHookError) as raised:
        paperclip_plugin_host.render_task_markdown(
            TaskSource(id="i", identifier="PC-1", title="t"), TaskMarkdownOptions()
        )
    assert raised.value.plugin == "exploding"
    assert str(raised.value) == (
        "plugin 'exploding' (registered in process) raised in paperclip_render_task_markdown: "
        "RuntimeError: template missing"
    )
