"""A fake provider's script: what its scripted "model" does for each prompt of a session.

A script is JSON: a list of steps run for every prompt, or an object
``{"turns": [[step, ...], ...]}``: a session's n-th prompt runs ``turns[n]``,
the last list repeating. Each step is an object with exactly one of the
fake's step kinds and that kind's options; a model step may say what its
response used (``usage``, :mod:`paperclip_provider_kit.usage`).

A fake's launch profile gives a folder (``--script-dir DIR``); a session of a
model runs ``DIR/<model>.json``, as a model endpoint answers by model name.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperclip_provider_kit.config import write_atomic
from paperclip_provider_kit.usage import UsageError, check_option

SCRIPT_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class ScriptError(ValueError):
    """Not a valid fake script, or none for a model."""


@dataclass(frozen=True, slots=True)
class StepRules:
    """The steps a fake knows: their kinds, and the options each kind takes."""

    kinds: frozenset[str]
    options: Mapping[str, Collection[str]]
    check_usage: Callable[[Any], None] = check_option
    """Checks a step's ``usage`` option (UsageError): the kit's by default."""

    def check(self, step: Any) -> str:
        """The kind of ``step``; ScriptError unless it has exactly one known kind and its options."""
        if not isinstance(step, dict):
            raise ScriptError(f"a step must be an object: {step!r}")
        kinds = self.kinds & step.keys()
        if len(kinds) != 1:
            raise ScriptError(f"a step needs exactly one of {sorted(self.kinds)}: {step!r}")
        (kind,) = kinds
        extra = step.keys() - {kind} - set(self.options.get(kind, ()))
        if extra:
            raise ScriptError(f"unknown key(s) {sorted(extra)} in step {step!r}")
        if "usage" in step:
            try:
                self.check_usage(step["usage"])
            except UsageError as exc:
                raise ScriptError(f"{exc} in step {step!r}") from None
        if kind == "call_tool" and not isinstance(step[kind], dict):
            raise ScriptError(f"call_tool needs an object with a 'name': {step!r}")
        return kind


CHAT_STEPS = StepRules(
    kinds=frozenset(
        {"message", "call_tool", "shell", "sleep", "wait_for_file", "touch_file", "fail", "exit"}
    ),
    options={
        "wait_for_file": {"timeout"},
        **{kind: {"usage"} for kind in ("message", "call_tool", "shell")},
    },
)
"""The steps of a fake whose model answers (``message``), calls a tool (``call_tool``) or
runs a shell (``shell``), with the timing and failure steps every fake has."""


@dataclass(frozen=True, slots=True)
class Script:
    """A session's steps, prompt by prompt."""

    turns: list[list[dict[str, Any]]]

    def steps_for(self, index: int) -> list[dict[str, Any]]:
        """The steps of a session's ``index``-th prompt (the last list repeats)."""
        return self.turns[min(index, len(self.turns) - 1)] if self.turns else []


def load_script(path: Path, rules: StepRules) -> Script:
    """Read and check a script file."""
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
            rules.check(step)
    return Script(turns)


def script_path(folder: Path, model: str | None) -> Path:
    """The script file of ``model`` in ``folder``; ScriptError when there is none."""
    if model is None or not SCRIPT_NAME.match(model) or model.startswith(".."):
        raise ScriptError(f"no script for model {model!r}: configure a plain model name")
    path = folder / f"{model}.json"
    if not path.is_file():
        raise ScriptError(f"no script for model {model!r} in {folder}")
    return path


def script_for(folder: Path, model: str | None, rules: StepRules = CHAT_STEPS) -> Script:
    """The script of ``model`` in ``folder``, checked against ``rules``."""
    return load_script(script_path(folder, model), rules)


async def timing_step(step: Mapping[str, Any], fail: Callable[[str], Exception]) -> bool:
    """Run a ``sleep``, ``touch_file`` (the fake's pid written into it) or ``wait_for_file``
    step (``timeout`` seconds, 60 by default, then ``fail(reason)`` is raised); False for a
    step of any other kind."""
    if "sleep" in step:
        await asyncio.sleep(float(step["sleep"]))
    elif "touch_file" in step:
        write_atomic(Path(step["touch_file"]), str(os.getpid()))
    elif "wait_for_file" in step:
        path, limit = Path(step["wait_for_file"]), float(step.get("timeout", 60))
        deadline = time.monotonic() + limit
        while not _exists(path):
            if time.monotonic() > deadline:
                raise fail(f"fake: wait_for_file {path} timed out after {limit:g}s")
            await asyncio.sleep(0.02)
    else:
        return False
    return True


def _exists(path: Path) -> bool:
    return path.exists()  # a stat of a local file: cheap enough for a fake's poll


def fake_parser(prog: str) -> argparse.ArgumentParser:
    """A fake CLI's argument parser, with the options every fake takes: ``--version``,
    ``--script-dir DIR`` (its scripts) and ``--log PATH`` (what it received and did)."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--script-dir", type=Path, help="a folder of <model>.json scripts")
    parser.add_argument("--log", help="append received requests and tool results here")
    return parser


def parse_fake(
    parser: argparse.ArgumentParser, argv: list[str] | None, version: str
) -> argparse.Namespace | None:
    """The fake's arguments; None once ``--version`` printed ``version``; a usage error
    (exit 2) without ``--script-dir``."""
    args = parser.parse_args(argv)
    if args.version:
        print(version)
        return None
    if args.script_dir is None:
        parser.error("--script-dir is required")
    return args
