"""The plugin host: discovery, the compatibility gate, the typed facade over the hooks, the built-ins.

Not to be confused with ``plugins/`` at the top of the repository: the plugin
distributions this host finds and loads.
"""

from __future__ import annotations

from paperclip.plugin_host.errors import (
    NoPluginAnswerError,
    PluginConflictError,
    PluginError,
    PluginHookError,
    PluginLoadError,
    ProviderNotInstalledError,
)
from paperclip.plugin_host.host import SPEC_MODULES, PluginHost
from paperclip.plugin_host.records import PluginRecord, PluginReport, PluginStatus, SkipCode

__all__ = [
    "SPEC_MODULES",
    "NoPluginAnswerError",
    "PluginConflictError",
    "PluginError",
    "PluginHookError",
    "PluginHost",
    "PluginLoadError",
    "PluginRecord",
    "PluginReport",
    "PluginStatus",
    "ProviderNotInstalledError",
    "SkipCode",
]
