"""Errors of the plugin host. Each names the plugin it is about (distribution and version)."""

from __future__ import annotations

from paperclip.errors import PaperclipError


class PluginError(Exception):
    """A plugin could not be loaded, conflicts with another, or misbehaved."""


class PluginLoadError(PluginError):
    """Startup refused: a plugin failed to load in strict mode, or its hooks do not fit the contract."""


class PluginConflictError(PluginError):
    """Two plugins registered the same provider kind or recovery policy name."""


class PluginHookError(PluginError):
    """A plugin raised inside a hook, or returned something the hook does not allow."""

    code = "plugin_failed"
    """What a tool call or a run that failed because of it reports."""

    def __init__(
        self,
        message: str,
        *,
        hook: str,
        plugin: str | None = None,
        distribution: str | None = None,
        version: str | None = None,
    ) -> None:
        super().__init__(message)
        self.hook = hook
        self.plugin = plugin
        self.distribution = distribution
        self.version = version


class PluginTimeoutError(PluginHookError):
    """A plugin's hook overran its time budget, or is still running from a call that did:
    the operation fails rather than go on without the plugin's answer."""

    code = "plugin_timeout"


class NoPluginAnswerError(PluginError):
    """No plugin answered a decision hook (its built-in plugin was disabled)."""


class ProviderNotInstalledError(PaperclipError):
    """A provider kind that no installed plugin provides."""

    status_code = 409
    code = "provider_not_installed"
