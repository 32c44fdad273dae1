"""``GET /api/plugins``: the running hook API and every plugin found, loaded or skipped."""

from __future__ import annotations

from typing import Literal

import msgspec
from litestar import Controller, get

from paperclip.http.access import Access, access
from paperclip.plugin_host import PluginHost, PluginRecord


class PluginOut(msgspec.Struct):
    name: str
    distribution: str
    version: str
    entry_point: str
    builtin: bool
    status: Literal["loaded", "skipped"]
    hooks: list[str]
    hook_api: str | None
    """The declared requirement on paperclip-hookspecs; null for built-ins."""
    code: str | None
    """Why it was skipped: disabled, not_allowed, no_hook_api_requirement,
    incompatible_hook_api, import_error, invalid."""
    reason: str | None

    @classmethod
    def of(cls, record: PluginRecord) -> PluginOut:
        return cls(
            name=record.name,
            distribution=record.distribution,
            version=record.version,
            entry_point=record.entry_point,
            builtin=record.builtin,
            status=record.status.value,
            hooks=list(record.hooks),
            hook_api=record.hook_api,
            code=record.code.value if record.code is not None else None,
            reason=record.reason,
        )


class PluginsOut(msgspec.Struct):
    hook_api: str
    """The version of the plugin contract this server runs."""
    plugins: list[PluginOut]
    problems: list[str]
    """What stops this set of plugins from serving (empty while the server runs)."""


class PluginController(Controller):
    path = "/plugins"
    tags = ["plugins"]

    @get("/", opt=access(Access.SIGNED_IN))
    async def list_plugins(self, plugin_host: PluginHost) -> PluginsOut:
        """Built-in plugins first, then installed ones, each with its status and hooks."""
        report = plugin_host.report()
        return PluginsOut(
            hook_api=report.hook_api,
            plugins=[PluginOut.of(r) for r in report.plugins],
            problems=list(report.problems),
        )
