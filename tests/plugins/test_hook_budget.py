"""The time budget of hook calls: a slow plugin is cut off, contained and reported.

Each slow plugin blocks on an event the test releases at its end, so no call
outlives its test; nothing here sleeps.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.completion import CompletionRefusal
from paperclip_hookspecs.presentation import (
    PresentationDecision,
    PresentationMode,
    UnpresentedTurn,
)
from paperclip_hookspecs.prompts import TaskMarkdownOptions, TaskSource
from paperclip_hookspecs.providers import ProviderCapabilities, ProviderKind

from paperclip.plugin_host import PluginHost
from paperclip.plugin_host.budget import ON_OVERRUN, OnOverrun
from paperclip.plugin_host.errors import PluginHookError, PluginTimeoutError
from paperclip.settings import Settings
from tests.plugins.samples import completion_check, conversation_turn

BUDGET = 0.3
SLACK = 5.0
"""A cut-off call returns within the budget plus this (a loaded machine is slow)."""
TASK = TaskSource(id="t1", identifier="ACM-1", title="Fix the build")


@pytest.fixture
def release():
    """Set at the test's end: every slow hook returns then."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def host():
    built = PluginHost(hook_budget=BUDGET)
    built.load_builtins()
    return built


class Slow:
    """Answers every hook it implements only once ``release`` is set."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    @hookimpl
    def paperclip_check_completion(self, check):
        self.release.wait(60)
        return CompletionRefusal(code="slow_but_sure", reason="slow", message="Not yet.")

    @hookimpl(wrapper=True)
    def paperclip_render_task_markdown(self, task, options):
        section = yield
        self.release.wait(60)
        return replace(section, text=section.text + "\n\nA slow plugin's words.")

    @hookimpl
    def paperclip_decide_presentation(self, turn):
        self.release.wait(60)
        return PresentationDecision.none("slow")

    @hookimpl
    def paperclip_accept_unpresented_turn(self, turn):
        self.release.wait(60)
        return True


def timed(call):
    started = time.monotonic()
    try:
        return call(), time.monotonic() - started
    except Exception as exc:
        return exc, time.monotonic() - started


def test_paperclip_check_completion_a_slow_guard_is_cut_off_and_the_check_fails(
    host, release, caplog
):
    host.register(Slow(release), name="slow")

    with caplog.at_level(logging.ERROR, logger="paperclip.plugin_host.host"):
        error, took = timed(lambda: host.check_completion(completion_check()))

    assert isinstance(error, PluginTimeoutError) and isinstance(error, PluginHookError)
    assert (error.code, error.plugin, error.hook) == (
        "plugin_timeout",
        "slow",
        "paperclip_check_completion",
    )
    assert BUDGET <= took < BUDGET + SLACK
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "plugin 'slow'" in line and "overran its budget of 0.3 s" in line
    assert "paperclip_check_completion" in line and "plugin_timeout" in line


def test_a_stuck_plugin_is_left_out_at_once_until_its_call_returns(host, release):
    host.register(Slow(release), name="slow")
    assert isinstance(timed(lambda: host.check_completion(completion_check()))[0], Exception)
    assert host.budget.stuck() == {"slow"}

    # Still stuck: refused without waiting again, whatever the hook.
    error, took = timed(lambda: host.check_completion(completion_check()))
    assert isinstance(error, PluginTimeoutError) and "has not returned yet" in str(error)
    assert took < BUDGET
    decision, took = timed(lambda: host.decide_presentation(conversation_turn()))
    assert decision.mode is PresentationMode.ANSWER and took < BUDGET

    # Its call returns: it is asked again, and answers in time now.
    release.set()
    deadline = time.monotonic() + SLACK
    while host.budget.stuck() and time.monotonic() < deadline:
        threading.Event().wait(0.01)
    assert host.budget.stuck() == frozenset()
    refusal = host.check_completion(completion_check())
    assert refusal is not None and refusal.code == "slow_but_sure"


def test_paperclip_render_task_markdown_a_slow_wrapper_is_answered_without(host, release, caplog):
    expected = host.render_task_markdown(TASK, TaskMarkdownOptions())
    host.register(Slow(release), name="slow")

    with caplog.at_level(logging.ERROR, logger="paperclip.plugin_host.host"):
        section, took = timed(lambda: host.render_task_markdown(TASK, TaskMarkdownOptions()))

    # The built-in rendering, as if the plugin were not installed.
    assert section == expected and "slow plugin" not in section.text
    assert BUDGET <= took < BUDGET + SLACK
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert (
        "plugin 'slow' (registered in process) is left out of paperclip_render_task_markdown"
        in line
    )


def test_paperclip_decide_presentation_and_recovery_go_on_without_a_slow_plugin(host, release):
    host.register(Slow(release), name="slow")
    decision, took = timed(lambda: host.decide_presentation(conversation_turn()))
    assert decision.mode is PresentationMode.ANSWER  # the built-in rule
    assert BUDGET <= took < BUDGET + SLACK
    # Without an answer, presentation recovery leaves a turn alone.
    turn = UnpresentedTurn(
        run_id="r",
        status_reason="conversation_turn_finished",
        result="done",
        issue_status="done",
        conversation_state="active",
        is_current_turn=True,
        same_agent=True,
        same_user=True,
        same_session_generation=True,
        other_execution_run=False,
    )
    assert host.accept_unpresented_turn(turn) is False


def test_paperclip_providers_a_slow_registration_fails_like_a_raising_one(release):
    class SlowKinds:
        @hookimpl
        def paperclip_providers(self):
            release.wait(60)
            return [ProviderKind("late", ProviderCapabilities(), lambda context: None)]

    host = PluginHost(hook_budget=BUDGET)
    host.register(SlowKinds(), name="slow-kinds")
    with pytest.raises(PluginTimeoutError, match="slow-kinds") as caught:
        host.providers()
    assert caught.value.hook == "paperclip_providers"
    assert any("slow-kinds" in problem for problem in host.problems())


def test_a_plugin_in_time_answers_and_the_core_waits_for_none(host):
    class Quick:
        @hookimpl
        def paperclip_check_completion(self, check):
            return CompletionRefusal(code="quick", reason="quick", message="No.")

    host.register(Quick(), name="quick")
    refusal, took = timed(lambda: host.check_completion(completion_check()))
    assert refusal.code == "quick" and took < BUDGET


def test_every_hook_has_a_rule_for_overruns():
    assert set(ON_OVERRUN) == set(PluginHost().spec_names())
    assert ON_OVERRUN["paperclip_check_completion"] is OnOverrun.FAIL
    assert ON_OVERRUN["paperclip_render_task_markdown"] is OnOverrun.WITHOUT


def test_the_budget_is_a_setting(monkeypatch, tmp_path):
    assert Settings(data_dir=tmp_path).plugins_hook_budget_seconds == 2.0
    monkeypatch.setenv("PAPERCLIP_PLUGINS_HOOK_BUDGET_SECONDS", "0.5")
    settings = Settings(data_dir=tmp_path)
    assert PluginHost.from_settings(settings).budget.seconds == 0.5
