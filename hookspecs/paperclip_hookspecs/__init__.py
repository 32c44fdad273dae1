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
unread-steers hook). :mod:`~paperclip_hookspecs.runs` is the read-only view of a
run that completion guards and presentation decisions are given.
:mod:`~paperclip_hookspecs.tools` is a small client for the run's tools, for
providers that are not MCP clients.

How hooks run: the core calls a hook synchronously and waits for its answer,
on the control plane's event loop (the runner's, for provider kinds), which
serves nothing else meanwhile. A hook therefore decides from its arguments,
quickly: it does no I/O, holds no database session, and never calls the HTTP
API back (the server that would answer is the one waiting). Work that needs
I/O belongs to the objects a hook returns (a driver, a recovery policy, a
tool handler), whose methods are ``async``. Each call of an installed
plugin's hook has a time budget (``PAPERCLIP_PLUGINS_HOOK_BUDGET_SECONDS``,
2 s by default): a hook still running after it is cut off, named in the log,
and left out until its call returns; the operation then goes on without the
plugin or fails with ``plugin_timeout``, per family (docs/plugins/README.md).
"""

from __future__ import annotations

from paperclip_hookspecs._markers import PROJECT_NAME, hookimpl

HOOK_API = "1.11.0"

__all__ = ["HOOK_API", "PROJECT_NAME", "hookimpl"]
