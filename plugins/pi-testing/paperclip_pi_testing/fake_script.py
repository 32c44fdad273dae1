"""The fake Pi's scripts: what the "model" does for each prompt of a session.

A script is JSON: a list of steps run for every prompt, or an object
``{"turns": [[step, ...], ...]}``: a session's n-th prompt (a follow-up sent
during a turn counts too) runs ``turns[n]``, the last list repeating. Each step
is one assistant message, as one model response is in Pi (a "turn"):

- ``{"message": "text"}``: a text answer (the prompt's final prose when last).
- ``{"call_tool": {"name": "finish", "arguments": {...}}}``: a call of one of the
  run's tools, which the bundled extension offers as ``paperclip_<name>``.
- ``{"shell": "command"}``: Pi's ``bash`` tool.
- ``{"sleep": seconds}``; ``{"touch_file": path}`` (writes the pid into it);
  ``{"wait_for_file": path, "timeout": seconds}`` (default 60 s, then the prompt fails).
- ``{"fail": "reason"}``: the model call fails (``stopReason: "error"``).
- ``{"exit": status}``: the process exits at once.

A model step (``message``, ``call_tool``, ``shell``) may say what its response
used: ``"usage": {"input_tokens", "cached_input_tokens", "output_tokens",
"reasoning_tokens", "cost"}`` (:mod:`paperclip_provider_kit.usage`); else it
reports the usage of its place among the session's responses.

The launch profile gives a folder (``--script-dir DIR``); a session
runs ``DIR/<model>.json``, the model being ``defaultModel`` of Pi's
``settings.json``, as a model endpoint answers by model name. A steer or
follow-up still queued when a prompt's steps are done makes the "model" go on
with the script's next list, in the same agent run, as a real model answers it.
"""

from __future__ import annotations

from paperclip_provider_kit.script import CHAT_STEPS, Script, ScriptError, script_for

__all__ = ["CHAT_STEPS", "Script", "ScriptError", "script_for"]
