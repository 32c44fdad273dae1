"""The fake OpenCode server's scripts: what the "model" does for each prompt of a session.

A script is JSON: a list of steps run for every prompt, or an object
``{"turns": [[step, ...], ...]}``: a session's n-th prompt (a follow-up sent
during a turn counts too) runs ``turns[n]``, the last list repeating. Each step
is one assistant message, as one model response is in OpenCode:

- ``{"message": "text"}``: a text answer (the prompt's final prose when last).
- ``{"call_tool": {"name": "finish", "arguments": {...}, "server": "paperclip"}}``:
  a call of an MCP tool, shown to the model as ``<server>_<name>`` (OpenCode's
  naming); ``server`` defaults to the only configured one.
- ``{"shell": "command"}``: OpenCode's ``bash`` tool.
- ``{"sleep": seconds}``; ``{"touch_file": path}`` (writes the pid into it);
  ``{"wait_for_file": path, "timeout": seconds}`` (default 60 s, then the prompt fails).
- ``{"fail": "reason"}``: the prompt ends with a ``session.error``.
- ``{"exit": status}``: the process exits at once.

A model step (``message``, ``call_tool``, ``shell``) may say what its response
used: ``"usage": {"input_tokens", "cached_input_tokens", "output_tokens",
"reasoning_tokens", "cost"}`` (:mod:`paperclip_provider_kit.usage`); else it
reports the usage of its place among the session's responses.

The server's launch profile gives a folder (``--script-dir DIR``); a session
runs ``DIR/<model>.json``, the model being the one in ``opencode.json``
(``paperclip/<model>``), as a model endpoint answers by model name.
"""

from __future__ import annotations

from paperclip_provider_kit.script import CHAT_STEPS, Script, ScriptError, script_for

__all__ = ["CHAT_STEPS", "Script", "ScriptError", "script_for"]
