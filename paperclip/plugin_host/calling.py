"""Calling a hook the way the host does: installed plugins within the budget, failures named.

The host's typed facade (``PluginHost``) calls these two functions for every
hook. A call that reaches only built-in plugins runs inline; one that reaches
an installed plugin runs within the budget (:mod:`paperclip.plugin_host.budget`).
A plugin that overruns it, or is still stuck in an earlier call, is left out
and the hook asked again without it, or the call fails with
``plugin_timeout``, by the hook's family; a plugin that raises is named in
the error (``plugin_failed``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import pluggy

from paperclip.plugin_host import failures
from paperclip.plugin_host.budget import HookBudget, OnOverrun, Overrun, on_overrun
from paperclip.plugin_host.records import PluginRecord


def call_hook(
    pm: pluggy.PluginManager,
    loaded: Mapping[str, PluginRecord],
    budget: HookBudget,
    caller: pluggy.HookCaller,
    kwargs: Mapping[str, Any],
) -> Any:
    """Call a decision hook (or any hook with pluggy's own fan-out) with ``kwargs``."""
    hook, left_out = caller.name, set[str]()
    while True:
        current = caller
        if left_out:
            plugins = [pm.get_plugin(name) for name in left_out]
            current = pm.subset_hook_caller(hook, remove_plugins=plugins)
        installed = [i for i in current.get_hookimpls() if not loaded[i.plugin_name].builtin]
        stuck = sorted(budget.stuck() & {i.plugin_name for i in installed})
        try:
            if stuck:
                raise Overrun(stuck[0], hook, budget.seconds)
            if not installed:
                return current(**kwargs)  # the core's own code: inline, never cut off
            work = partial(current, **kwargs)
            return budget.call(hook, work, failures.impl_codes(installed))
        except Overrun as over:
            cut_off(budget, hook, loaded[over.plugin], still=bool(stuck))
            left_out.add(over.plugin)  # asked again without it
        except Exception as exc:
            owner = failures.raiser(exc, current.get_hookimpls(), loaded)
            raise failures.raised(hook, exc, owner) from exc


def call_registration(
    budget: HookBudget, hook: str, impl: pluggy.HookImpl, record: PluginRecord
) -> Any:
    """One plugin's registration hook (no arguments); a plugin over its budget fails it."""
    still = record.name in budget.stuck()
    try:
        if record.builtin:
            return impl.function()
        if still:
            raise Overrun(record.name, hook, budget.seconds)
        return budget.call(hook, impl.function, failures.impl_codes([impl]))
    except Overrun:
        raise failures.timed_out(hook, record, budget.seconds, still=still) from None
    except Exception as exc:
        raise failures.raised(hook, exc, record) from exc


def cut_off(budget: HookBudget, hook: str, record: PluginRecord, *, still: bool) -> None:
    """Report a plugin over its budget: raise ``plugin_timeout``, or log that the hook goes on
    without it, by the hook's family."""
    if on_overrun(hook) is OnOverrun.FAIL:
        raise failures.timed_out(hook, record, budget.seconds, still=still)
    failures.left_out(hook, record, budget.seconds, still=still)
