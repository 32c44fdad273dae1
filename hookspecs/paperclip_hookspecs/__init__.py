"""The Paperclip plugin contract.

Plugins import only this package. ``HOOK_API`` versions the contract itself
(minor: additions; major: removals), independently of the core's version; the
core checks each plugin's declared requirement on ``paperclip-hookspecs``
against it before registering the plugin.
"""

from __future__ import annotations

from paperclip_hookspecs._markers import PROJECT_NAME, hookimpl

HOOK_API = "1.0.0"

__all__ = ["HOOK_API", "PROJECT_NAME", "hookimpl"]
