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

from paperclip.plugin_host.errors import PluginHookError, PluginTimeoutError
from paperclip.plugin_host.records import PluginRecord

log = logging.getLogger("paperclip.plugin_host.host")


def impl_codes(impls: Sequence[pluggy.HookImpl]) -> dict[CodeType, str]:
    """The code object of each implementation, to the name of its plugin."""
    codes: dict[CodeType, str] = {}
    for impl in impls:
        function = inspect.unwrap(impl.function)
        code = getattr(getattr(function, "__func__", function), "__code__", None)
        if code is not None:
            codes[code] = impl.plugin_name
    return codes


def raiser(
    exc: BaseException, impls: Sequence[pluggy.HookImpl], loaded: Mapping[str, PluginRecord]
) -> PluginRecord | None:
    """The plugin whose implementation raised: the outermost frame that is one of ``impls``."""
    codes = impl_codes(impls)
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


def timed_out(
    hook: str, record: PluginRecord, seconds: float, *, still: bool
) -> PluginTimeoutError:
    """Log, naming the plugin, that it overran (or is still stuck in) its budget, and build the
    error the operation fails with (``plugin_timeout``)."""
    if still:
        message = (
            f"{record.label} did not answer {hook}: a call of it that overran its budget of "
            f"{seconds:g} s has not returned yet"
        )
    else:
        message = f"{record.label} overran its budget of {seconds:g} s in {hook} and was cut off"
    # The cut-off is the event; a call refused while the plugin is still stuck is its echo.
    (log.warning if still else log.error)("%s; the operation fails (plugin_timeout)", message)
    return PluginTimeoutError(
        message,
        hook=hook,
        plugin=record.name,
        distribution=record.distribution,
        version=record.version,
    )


def left_out(hook: str, record: PluginRecord, seconds: float, *, still: bool) -> None:
    """Log, naming the plugin, that the call goes on without it."""
    why = (
        "a call of it that overran its budget has not returned yet"
        if still
        else f"it overran its budget of {seconds:g} s and was cut off"
    )
    (log.warning if still else log.error)(
        "%s is left out of %s: %s; answered without it", record.label, hook, why
    )
