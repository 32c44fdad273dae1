"""The core's built-in plugins, all of them here: default answers to the contract's decision hooks.

Each is an ordinary plugin module (hooks marked with ``paperclip_hookspecs.hookimpl``,
``trylast=True`` for fallbacks), registered before any installed plugin. A
module that is not part of this installation is left out.
"""

from __future__ import annotations

BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (
    ("prompts", "paperclip.plugin_host.builtin.prompts"),
    ("tool-recovery", "paperclip.plugin_host.builtin.tool_recovery"),
    ("completion-guard", "paperclip.plugin_host.builtin.completion_guard"),
    ("presentation", "paperclip.plugin_host.builtin.presentation"),
    ("budget-alerts", "paperclip.plugin_host.builtin.budget_alerts"),
)
"""(name, module) of every built-in plugin, in registration order."""
