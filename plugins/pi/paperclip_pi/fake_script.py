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

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperclip_provider_kit.usage import UsageError, check_option

STEP_KINDS = frozenset(
    {"message", "call_tool", "shell", "sleep", "wait_for_file", "touch_file", "fail", "exit"}
)
STEP_OPTIONS = {
    "wait_for_file": {"timeout"},
    **{kind: {"usage"} for kind in ("message", "call_tool", "shell")},
}
SCRIPT_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class ScriptError(ValueError):
    """Not a valid fake script, or none for a model."""


@dataclass(frozen=True, slots=True)
class Script:
    turns: list[list[dict[str, Any]]]

    def steps_for(self, index: int) -> list[dict[str, Any]]:
        """The steps of a session's ``index``-th prompt (the last list repeats)."""
        return self.turns[min(index, len(self.turns) - 1)] if self.turns else []


def load_script(path: Path) -> Script:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        turns = [data]
    elif isinstance(data, dict) and isinstance(data.get("turns"), list):
        turns = data["turns"]
    else:
        raise ScriptError("a script is a list of steps or {'turns': [[step, ...], ...]}")
    for steps in turns:
        if not isinstance(steps, list):
            raise ScriptError("'turns' must be a list of step lists")
        for step in steps:
            _check(step)
    return Script(turns)


def script_for(folder: Path, model: str | None) -> Script:
    """The script of ``model`` in ``folder``."""
    if model is None or not SCRIPT_NAME.match(model) or model.startswith(".."):
        raise ScriptError(f"no script for model {model!r}: configure a plain model name")
    path = folder / f"{model}.json"
    if not path.is_file():
        raise ScriptError(f"no script for model {model!r} in {folder}")
    return load_script(path)


def _check(step: Any) -> None:
    if not isinstance(step, dict):
        raise ScriptError(f"a step must be an object: {step!r}")
    kinds = STEP_KINDS & step.keys()
    if len(kinds) != 1:
        raise ScriptError(f"a step needs exactly one of {sorted(STEP_KINDS)}: {step!r}")
    (kind,) = kinds
    extra = step.keys() - {kind} - STEP_OPTIONS.get(kind, set())
    if extra:
        raise ScriptError(f"unknown key(s) {sorted(extra)} in step {step!r}")
    if "usage" in step:
        try:
            check_option(step["usage"])
        except UsageError as exc:
            raise ScriptError(f"{exc} in step {step!r}") from None
    if kind == "call_tool" and not isinstance(step[kind], dict):
        raise ScriptError(f"call_tool needs an object with a 'name': {step!r}")
