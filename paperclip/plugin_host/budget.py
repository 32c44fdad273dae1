"""The time budget of a hook call: a slow installed plugin is cut off, contained and reported.

Hooks are synchronous: the caller (the control plane's event loop) waits for
the answer and serves nothing else meanwhile. A hook that blocks (a network
call, a lock, an HTTP call back to this very server) would stall the engine.
So a call that reaches an installed plugin's code runs on a worker thread,
and the caller waits for it at most ``seconds``. When the time is up and an
installed plugin's implementation is the code running, the caller stops
waiting: the call is :class:`Overrun`, naming that plugin. Its thread cannot
be stopped; it runs on, the plugin counts as *stuck* until it returns, and
every call in the meantime leaves it out without waiting.

The core's built-in plugins are its own code: a call that reaches only them
runs inline, and one of theirs is never cut off.

What happens after an overrun depends on the family (:data:`ON_OVERRUN`): the
call is asked again without the plugin (the built-in answer, or the next
plugin's), or it fails with ``plugin_timeout``, where going on without the
plugin would skip a check or lose what it decides.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import CodeType, FrameType
from typing import Any, TypeVar

T = TypeVar("T")

log = logging.getLogger("paperclip.plugin_host.host")

DEFAULT_SECONDS = 2.0
POLL_SECONDS = 0.02
"""Past the budget, how often the caller looks again at whose code runs (a built-in's time
is not cut off; the first moment a plugin's code runs, it is)."""


class OnOverrun(StrEnum):
    """What a call does when an installed plugin overran its budget."""

    WITHOUT = "without"
    """Ask again without the plugin: the built-in answer (or the next plugin's)."""
    FAIL = "fail"
    """Fail the operation with ``plugin_timeout``, as a plugin that raised would fail it."""


ON_OVERRUN: Mapping[str, OnOverrun] = {
    # Notifications: the others are told all the same.
    "paperclip_budget_alert": OnOverrun.WITHOUT,
    # Registration: a plugin whose list cannot be had is a plugin that failed (at startup).
    "paperclip_providers": OnOverrun.FAIL,
    "paperclip_recovery_policies": OnOverrun.FAIL,
    "paperclip_tools": OnOverrun.FAIL,
    # Prompt rendering: the built-in rendering is a whole, valid prompt.
    "paperclip_render_task_markdown": OnOverrun.WITHOUT,
    "paperclip_render_wake_prompt": OnOverrun.WITHOUT,
    "paperclip_build_turn_context": OnOverrun.WITHOUT,
    "paperclip_select_prompt_sections": OnOverrun.WITHOUT,
    "paperclip_render_continuation": OnOverrun.WITHOUT,
    "paperclip_validate_completion_references": OnOverrun.WITHOUT,
    "paperclip_render_completion_recovery": OnOverrun.WITHOUT,
    # Tool recovery: the built-in replays receipts and otherwise keeps inputs pending.
    "paperclip_recover_tool_input": OnOverrun.WITHOUT,
    # A guard unheard is a report unchecked: the report is not accepted.
    "paperclip_check_completion": OnOverrun.FAIL,
    # Presentation: the built-in rule; recovery without an answer leaves a turn alone.
    "paperclip_decide_presentation": OnOverrun.WITHOUT,
    "paperclip_accept_unpresented_turn": OnOverrun.WITHOUT,
    # Unread steers must reach the continuation: without the answer it is not built.
    "paperclip_unread_steers": OnOverrun.FAIL,
}


def on_overrun(hook: str) -> OnOverrun:
    """The family's rule for ``hook``; a hook not listed fails (the safe default)."""
    return ON_OVERRUN.get(hook, OnOverrun.FAIL)


class Overrun(Exception):
    """An installed plugin's implementation was still running when the budget ran out."""

    def __init__(self, plugin: str, hook: str, seconds: float) -> None:
        super().__init__(f"{plugin} overran {hook} ({seconds:g} s)")
        self.plugin = plugin
        self.hook = hook
        self.seconds = seconds


@dataclass(frozen=True, slots=True)
class Stuck:
    """A call of a plugin that was cut off and has not returned yet."""

    hook: str
    since: float


class HookBudget:
    """Runs hook calls with a time limit, and remembers which plugins are stuck."""

    def __init__(self, seconds: float = DEFAULT_SECONDS) -> None:
        if seconds <= 0:
            raise ValueError("a hook budget is a positive number of seconds")
        self.seconds = seconds
        self._lock = threading.Lock()
        self._stuck: dict[str, Stuck] = {}

    def stuck(self) -> frozenset[str]:
        """The plugins whose cut-off call still runs: left out of every call until it returns."""
        with self._lock:
            return frozenset(self._stuck)

    def call(self, hook: str, work: Callable[[], T], codes: Mapping[CodeType, str]) -> T:
        """``work()`` on a worker thread, waited for at most the budget.

        ``codes`` maps the code of each installed plugin's implementation to the
        plugin's name: past the budget, the first time one of them is running,
        :class:`Overrun` is raised naming it. Whatever ``work`` raises is raised here.
        """
        done = threading.Event()
        outcome: dict[str, Any] = {}
        abandoned: list[str] = []

        def run() -> None:
            try:
                outcome["value"] = work()
            except BaseException as exc:  # handed to the waiting caller, who raises it
                outcome["error"] = exc
            finally:
                with self._lock:
                    done.set()
                    for plugin in abandoned:
                        self._stuck.pop(plugin, None)
                if abandoned:
                    _returned(abandoned[0], hook)

        context = contextvars.copy_context()
        worker = threading.Thread(
            target=context.run, args=(run,), name=f"paperclip-hook-{hook}", daemon=True
        )
        worker.start()
        if not done.wait(self.seconds):
            while not done.wait(POLL_SECONDS):
                plugin = _running_plugin(worker, codes)
                if plugin is None:
                    continue  # the core's own code, or between implementations: not cut off
                with self._lock:
                    if done.is_set():
                        break
                    abandoned.append(plugin)
                    self._stuck[plugin] = Stuck(hook, time.monotonic())
                raise Overrun(plugin, hook, self.seconds)
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]  # type: ignore[no-any-return]


def _running_plugin(worker: threading.Thread, codes: Mapping[CodeType, str]) -> str | None:
    """The plugin whose implementation is on the worker's stack (the innermost one), if any."""
    frame: FrameType | None = sys._current_frames().get(worker.ident or -1)
    while frame is not None:
        plugin = codes.get(frame.f_code)
        if plugin is not None:
            return plugin
        frame = frame.f_back
    return None


def _returned(plugin: str, hook: str) -> None:
    log.warning(
        "plugin %s returned from %s after it was cut off; it is asked again from now on",
        plugin,
        hook,
    )
