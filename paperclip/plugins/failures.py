"""Naming the plugin behind a failure: which implementation raised, or returned the wrong thing.

Every failure is logged once, here, with the plugin's name, distribution and
version, and becomes the ``PluginHookError`` the caller raises.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping, Sequence
from types import CodeType

import pluggy

from paperclip.plugins.errors import PluginHookError
from paperclip.plugins.records import PluginRecord

log = logging.getLogger("paperclip.plugins.host")


def raiser(
    exc: BaseException, impls: Sequence[pluggy.HookImpl], loaded: Mapping[str, PluginRecord]
) -> PluginRecord | None:
    """The plugin whose implementation raised: the outermost frame that is one of ``impls``."""
    codes: dict[CodeType, str] = {}
    for impl in impls:
        function = inspect.unwrap(impl.function)
        code = getattr(getattr(function, "__func__", function), "__code__", None)
        if code is not None:
            codes[code] = impl.plugin_name
    tb = exc.__traceback__
    while tb is not None:
        name = codes.get(tb.tb_frame.f_code)
        if name is not None:
            return loaded.get(name)
        tb = tb.tb_next
    return None


def raised(hook: str, exc: Exception, record: PluginRecord | None) -> PluginHookError:
    who = record.label if record is not None else "a plugin"
    return failure(f"{who} raised in {hook}: {type(exc).__name__}: {exc}", hook, record, exc)


def bad_result(
    hook: str,
    expected: str,
    got: object,
    record: PluginRecord | None,
    candidates: Sequence[PluginRecord] = (),
) -> PluginHookError:
    who = record.label if record is not None else "one of " + ", ".join(r.label for r in candidates)
    return failure(
        f"{who} returned {type(got).__name__} from {hook}, expected {expected}", hook, record
    )


def failure(
    message: str, hook: str, record: PluginRecord | None, exc: Exception | None = None
) -> PluginHookError:
    """Log the failure once, naming the plugin, and build the error the caller raises."""
    log.error("%s", message, exc_info=exc)
    if record is None:
        return PluginHookError(message, hook=hook)
    return PluginHookError(
        message,
        hook=hook,
        plugin=record.name,
        distribution=record.distribution,
        version=record.version,
    )
