"""A run's way through the code can be followed: each hand-off's docstring names the next stop.

A run leaves the route through the database and the outbox, so imports do not
show where it goes. Each module where it changes hands says so in a paragraph
that starts "A run's way", and every file that paragraph names exists.
"""

from __future__ import annotations

import ast
import re
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

STOPS = [
    "paperclip/domain/issues/issues_routes.py",
    "paperclip/domain/issues/issues.py",
    "paperclip/domain/runs/wakes.py",
    "paperclip/engine/scheduling/scheduler.py",
    "paperclip/engine/scheduling/wake_claims.py",
    "paperclip/engine/logs/outbox.py",
    "paperclip/engine/links/link.py",
    "paperclip/runner/runtime.py",
    "plugins/codex/paperclip_codex/driver.py",
    "paperclip/engine/connections/inbox.py",
]
"""The hand-offs, in the order a run meets them (docs/runs.md)."""


def way(path: str) -> str:
    doc = ast.get_docstring(ast.parse((ROOT / path).read_text())) or ""
    found = [p for p in doc.split("\n\n") if p.startswith("A run's way")]
    assert found, f'{path}: no paragraph starting "A run\'s way" in its docstring'
    return " ".join(found[0].split())


def named_files(paragraph: str, path: str) -> list[Path]:
    """The ``*.py`` files a paragraph names, found from the module's package or the roots."""
    here = (ROOT / path).parent
    bases = [here, *here.parents]
    files = []
    for name in re.findall(r"``([\w/]+\.py)``", paragraph):
        hit = next((base / name for base in bases if (base / name).is_file()), None)
        if hit is None:  # a provider's module, named from its package
            hit = next(ROOT.glob(f"plugins/*/{name}"), None)
        assert hit is not None, f"{path} names {name}, which is not a file"
        files.append(hit)
    return files


@pytest.mark.parametrize("path", STOPS)
def test_each_hand_off_names_files_that_exist(path):
    assert named_files(way(path), path)


def test_each_stop_names_the_next_one():
    for here, after in pairwise(STOPS):
        names = {f.resolve() for f in named_files(way(here), here)}
        assert (ROOT / after).resolve() in names, f"{here} does not name {after}"
