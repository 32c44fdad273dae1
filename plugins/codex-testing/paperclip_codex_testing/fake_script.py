"""The fake app-server's scripts: what it does on each turn, and how a thread finds its script.

A script is JSON: a list of steps run on every turn, or an object::

    {"turns": [[step, ...], [step, ...]], "consume_steer": true}

The thread's n-th turn runs ``turns[n]`` (the last list repeats); ``"steps"``
may stand for a single list. Steps (one key each):

- ``{"message": "text"}``: an ``agentMessage`` item, streamed as deltas.
- ``{"call_tool": {"name": ..., "arguments": {...}, "server": ...}}``: an
  ``mcpToolCall`` item, gated by tool approval the way Codex gates it.
- ``{"page_tool": {"name": ..., "arguments": {...}, "start_cursor": "error.correction.cursor"}}``:
  a model paging through a cursor-paged tool: one ``call_tool`` per page,
  passing each result's ``next_cursor`` as the ``cursor`` argument until it is
  null (at most ``max_pages``, default 100; then the turn fails). The first
  call passes no cursor, or the value at ``start_cursor`` (a dotted path) in
  the previous tool result, e.g. the cursor a refused call told it to
  continue from. ``cursor_argument`` and ``next_cursor`` rename the two.
- ``{"shell": {"command": "...", "escalate": false}}``: a ``commandExecution``
  item, the command run in the thread's sandbox as far as git goes
  (:mod:`paperclip_codex_testing.fake_sandbox`); an escalated one asks the client
  under ``on-request`` and runs unsandboxed when accepted, and is refused
  without asking under ``never``, as Codex does.
- ``{"sleep": seconds}``; ``{"touch_file": path}`` (writes the pid into it);
  ``{"wait_for_file": path, "timeout": seconds}`` (default 60 s, then the turn fails).
- ``{"fail": "reason"}``: the turn ends ``failed`` with that message.
- ``{"expect_prompt": "text"}``: the turn ends ``failed`` unless the text of the
  turn's input (its prompt) contains ``text``: a model that follows only what
  it was told.
- ``{"request_approval": "commandExecution" | "fileChange"}``: asks the client.
- ``{"notify": {"method": ..., "params": {...}}}``: any notification.
- ``{"exit": status}``: the process exits at once, mid-turn.

Each model response (a ``message``, ``call_tool``, ``shell`` or
``request_approval`` step, each page of a ``page_tool``) reports its token
usage when it is done, as Codex does (:mod:`paperclip_codex_testing.fake_usage`); the
step's ``usage`` option (``{"input_tokens", "cached_input_tokens",
"output_tokens", "reasoning_tokens"}``) sets the numbers, else they are derived
from the response's place in the thread.

A launch profile gives the fake either one script (``--script PATH``) or a
folder of them (``--script-dir DIR``): then a thread runs ``DIR/<model>.json``,
the model being the thread's (``thread/start`` or ``config.toml``), the way a
real model endpoint answers by model name. So an agent picks its script with
its ``model`` setting and never names a file or a program.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperclip_provider_kit.script import ScriptError, StepRules, script_path
from paperclip_provider_kit.usage import UsageError

from paperclip_codex_testing.fake_usage import check_option

__all__ = ["STEP_KINDS", "Script", "ScriptError", "ScriptSource", "load_script"]

STEP_KINDS = frozenset(
    {
        "message",
        "call_tool",
        "page_tool",
        "shell",
        "sleep",
        "wait_for_file",
        "touch_file",
        "fail",
        "expect_prompt",
        "request_approval",
        "notify",
        "exit",
    }
)
STEP_OPTIONS = {
    "wait_for_file": {"timeout"},
    **{
        kind: {"usage"}
        for kind in ("message", "call_tool", "page_tool", "shell", "request_approval")
    },
}


def _check_usage(option: Any) -> None:
    # Codex reports no cost: its usage option has the four counts only.
    if (problem := check_option(option)) is not None:
        raise UsageError(problem)


RULES = StepRules(STEP_KINDS, STEP_OPTIONS, _check_usage)


@dataclass(frozen=True, slots=True)
class Script:
    """What the fake does on each turn."""

    turns: list[list[dict[str, Any]]]
    consume_steer: bool = False

    def steps_for(self, turn_index: int) -> list[dict[str, Any]]:
        """The steps of a thread's ``turn_index``-th turn (the last list repeats)."""
        if not self.turns:
            return []
        return self.turns[min(turn_index, len(self.turns) - 1)]


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and validate a script file."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    consume_steer = False
    if isinstance(data, list):
        turns = [data]
    elif isinstance(data, dict):
        consume_steer = bool(data.get("consume_steer", False))
        if "turns" in data:
            turns = data["turns"]
        elif "steps" in data:
            turns = [data["steps"]]
        else:
            raise ScriptError("a script object needs 'turns' or 'steps'")
    else:
        raise ScriptError("a script is a list of steps or an object")
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        raise ScriptError("'turns' must be a list of step lists")
    for steps in turns:
        for step in steps:
            _check_step(step)
    return Script(turns=turns, consume_steer=consume_steer)


def _check_step(step: Any) -> None:
    kind = RULES.check(step)
    if kind in ("call_tool", "page_tool") and not (
        isinstance(step[kind], dict) and isinstance(step[kind].get("name"), str)
    ):
        raise ScriptError(f"{kind} needs an object with a 'name': {step!r}")
    if kind == "expect_prompt" and not (isinstance(step[kind], str) and step[kind]):
        raise ScriptError(f"expect_prompt needs a text to look for: {step!r}")
    if kind == "shell" and not (
        isinstance(step[kind], dict) and isinstance(step[kind].get("command"), str)
    ):
        raise ScriptError(f"shell needs an object with a 'command': {step!r}")


@dataclass(frozen=True, slots=True)
class ScriptSource:
    """Where the fake's scripts come from: one file for every thread, or one per model."""

    file: Path | None = None
    folder: Path | None = None

    def for_model(self, model: str | None) -> Script:
        """The script a thread of ``model`` runs; ScriptError when there is none."""
        if self.file is not None:
            return load_script(self.file)
        assert self.folder is not None
        return load_script(script_path(self.folder, model))
