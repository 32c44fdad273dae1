"""The plugin host: discovery, the compatibility gate, and the typed facade over the hooks."""

from __future__ import annotations

from paperclip.plugins.errors import (
    NoPluginAnswerError,
    PluginConflictError,
    PluginError,
    PluginHookError,
    PluginLoadError,
    ProviderNotInstalledError,
)
from paperclip.plugins.host import SPEC_MODULES, PluginHost
from paperclip.plugins.records import PluginRecord, PluginReport, PluginStatus, SkipCode

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
