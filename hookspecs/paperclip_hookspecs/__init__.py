"""The Paperclip plugin contract.

Plugins import only this package. ``HOOK_API`` versions the contract itself
(minor: additions; major: removals), independently of the core's version; the
core checks each plugin's declared requirement on ``paperclip-hookspecs``
against it before registering the plugin. The distribution's version is
``HOOK_API``, so a plugin states the contract it needs as an ordinary
dependency (``paperclip-hookspecs>=1.2,<2``). See ``CHANGELOG.md``.

One module per hook family: :mod:`~paperclip_hookspecs.providers`,
:mod:`~paperclip_hookspecs.prompts`, :mod:`~paperclip_hookspecs.receipts`,
:mod:`~paperclip_hookspecs.plugin_tools`,
:mod:`~paperclip_hookspecs.completion`, :mod:`~paperclip_hookspecs.presentation`,
:mod:`~paperclip_hookspecs.recovery` (with :mod:`~paperclip_hookspecs.steering`, its
unread-steers hook). :mod:`~paperclip_hookspecs.tools` is a small client for the
run's tools, for providers that are not MCP clients.
"""

from __future__ import annotations

from paperclip_hookspecs._markers import PROJECT_NAME, hookimpl

HOOK_API = "1.8.0"

__all__ = ["HOOK_API", "PROJECT_NAME", "hookimpl"]
