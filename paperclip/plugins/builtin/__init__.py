"""The core's built-in plugins: default answers to the contract's decision hooks.

Each is an ordinary plugin module (hooks marked with ``paperclip_hookspecs.hookimpl``,
``trylast=True`` for fallbacks), registered before any installed plugin. A
module that is not part of this installation is left out.
"""

from __future__ import annotations

BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (
    ("prompts", "paperclip.prompts.plugin"),
    ("tool-recovery", "paperclip.plugins.builtin.tool_recovery"),
    ("completion-guard", "paperclip.plugins.builtin.completion_guard"),
    ("presentation", "paperclip.plugins.builtin.presentation"),
    ("budget-alerts", "paperclip.plugins.builtin.budget_alerts"),
)
"""(name, module) of every built-in plugin, in registration order."""
