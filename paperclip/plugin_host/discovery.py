"""Finding plugins: the built-in modules, and installed distributions' ``paperclip`` entry points.

Discovery decides, for each plugin found, whether it may load (block and allow
lists, the hook-API gate) and imports it; the host then registers what was
imported. Nothing here raises for a bad plugin: each outcome is a record.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from importlib.metadata import EntryPoint, entry_points

from packaging.utils import canonicalize_name

import paperclip
from paperclip.plugin_host import compat
from paperclip.plugin_host.builtin import BUILTIN_PLUGINS
from paperclip.plugin_host.records import PluginRecord, PluginStatus, SkipCode

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "paperclip"


@dataclass(frozen=True, slots=True)
class Found:
    """A plugin that discovery looked at: the imported object, or none and why in its record."""

    record: PluginRecord
    plugin: object | None = None


def builtin_plugins(disable: frozenset[str] = frozenset()) -> list[Found]:
    """The core's own plugins that are present in this installation, in their fixed order."""
    found = []
    for name, module_name in BUILTIN_PLUGINS:
        record = PluginRecord(
            name=name,
            distribution=paperclip.DISTRIBUTION,
            version=paperclip.__version__,
            entry_point=module_name,
            builtin=True,
            status=PluginStatus.SKIPPED,
        )
        if canonicalize_name(name) in _canonical(disable):
            found.append(
                Found(skip(record, SkipCode.DISABLED, "disabled by PAPERCLIP_PLUGINS_DISABLE"))
            )
            continue
        if not _module_exists(module_name):
            log.debug("built-in plugin %s is not part of this installation", module_name)
            continue
        found.append(_import(record, partial(importlib.import_module, module_name)))
    return found


def installed_plugins(
    hook_api: str,
    *,
    disable: frozenset[str] = frozenset(),
    only: frozenset[str] | None = None,
) -> list[Found]:
    """Every entry point of the ``paperclip`` group, sorted by name, gated and imported.

    The order is the registration order, so it must not depend on ``sys.path``
    order: a later registered plugin is asked first by decision hooks.
    """
    points = entry_points(group=ENTRY_POINT_GROUP)
    return [
        _installed(ep, hook_api, disable, only)
        for ep in sorted(points, key=lambda ep: (ep.name, ep.value))
    ]


def _installed(
    ep: EntryPoint, hook_api: str, disable: frozenset[str], only: frozenset[str] | None
) -> Found:
    dist = ep.dist
    declared = compat.declared_hook_api(dist) if dist is not None else None
    record = PluginRecord(
        name=ep.name,
        distribution=dist.metadata["Name"] if dist is not None else "",
        version=dist.version if dist is not None else "",
        entry_point=ep.value,
        builtin=False,
        status=PluginStatus.SKIPPED,
        hook_api=compat.describe(declared) if declared is not None else None,
    )
    names = {canonicalize_name(ep.name), canonicalize_name(record.distribution)}
    if names & _canonical(disable):
        return Found(skip(record, SkipCode.DISABLED, "disabled by PAPERCLIP_PLUGINS_DISABLE"))
    if only is not None and not names & _canonical(only):
        return Found(skip(record, SkipCode.NOT_ALLOWED, "not listed in PAPERCLIP_PLUGINS_ONLY"))
    reason = compat.refusal(declared, hook_api)
    if reason is not None:
        code = (
            SkipCode.NO_HOOK_API_REQUIREMENT if declared is None else SkipCode.INCOMPATIBLE_HOOK_API
        )
        return Found(skip(record, code, reason))
    return _import(record, ep.load)


def _import(record: PluginRecord, load: Callable[[], object]) -> Found:
    try:
        plugin = load()
    except Exception as exc:  # any failure to import is the plugin's, reported, not ours
        log.debug("importing %s failed", record.label, exc_info=exc)
        reason = f"import of {record.entry_point} failed: {type(exc).__name__}: {exc}"
        return Found(skip(record, SkipCode.IMPORT_ERROR, reason))
    return Found(record, plugin)


def skip(record: PluginRecord, code: SkipCode, reason: str) -> PluginRecord:
    """The record of a plugin that will not be registered, logged in one line."""
    if code is SkipCode.DISABLED or code is SkipCode.NOT_ALLOWED:
        log.info("%s skipped: %s", record.label, reason)
    else:
        log.warning("%s skipped: %s", record.label, reason)
    return replace(record, status=PluginStatus.SKIPPED, code=code, reason=reason)


def _canonical(names: frozenset[str]) -> set[str]:
    # Settings name a plugin by entry point or distribution, spelled either way.
    return {canonicalize_name(n) for n in names}


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False
