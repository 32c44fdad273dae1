"""docs/plugins/authoring.md, followed literally in a clean folder.

Its files (fenced blocks with a ``title``) are written and its commands (``$``
lines of ``console`` blocks) are run, in the order of the page, as one shell
script: a fresh virtualenv, the plugin installed next to hookspecs and the
core, its tests run, and ``paperclip plugins --json`` showing it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.authoring_walk, pytest.mark.process]

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "plugins" / "authoring.md"
FENCE = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', re.MULTILINE | re.DOTALL)
EOF_MARK = "PAPERCLIP_WALK_EOF"


def walk_script(page: str) -> str:
    """The page as a shell script: titled blocks become files, ``$`` lines commands."""
    lines = ["set -euo pipefail"]
    for language, title, body in FENCE.findall(page):
        if title:
            assert EOF_MARK not in body
            lines += [
                f'mkdir -p "$(dirname {title})"',
                f"cat > {title} <<'{EOF_MARK}'",
                body + EOF_MARK,
            ]
        elif language == "console":
            lines += [line[2:] for line in body.splitlines() if line.startswith("$ ")]
    return "\n".join(lines) + "\n"


def test_the_walk_has_files_and_commands():
    script = walk_script(PAGE.read_text())
    for expected in (
        "cat > pyproject.toml",
        "cat > paperclip_hello/plugin.py",
        "cat > tests/test_plugin.py",
        "paperclip_provider_run(",
        ".venv/bin/pytest -q",
        ".venv/bin/paperclip plugins --json",
    ):
        assert expected in script


def test_the_authoring_walk_works_in_a_clean_folder(tmp_path):
    script = walk_script(PAGE.read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERCLIP_", "VIRTUAL_ENV"))}
    env.pop("PYTHONPATH", None)
    env["PAPERCLIP_SRC"] = str(ROOT)
    env["PAPERCLIP_DATA_DIR"] = str(tmp_path / "data")
    # The walk's real run starts its own embedded PostgreSQL, beside this session's one (its
    # user must reach the folder: the tox work dir is open to it, a pytest tmp dir may not be).
    pgdata = os.environ.get("PAPERCLIP_TEST_PGDATA")
    if pgdata:
        env["PAPERCLIP_TEST_PGDATA"] = f"{pgdata}-walk"
    # uv comes with the test environment; the walk expects it on PATH.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    folder = tmp_path / "empty"
    folder.mkdir()

    result = subprocess.run(
        ["bash", "-c", script],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )

    assert result.returncode == 0, f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert re.search(r"\b3 passed\b", result.stdout), result.stdout
    report = json.loads(result.stdout.strip().splitlines()[-1])
    [hello] = [p for p in report["plugins"] if p["name"] == "hello"]
    assert hello == {
        "name": "hello",
        "distribution": "paperclip-hello",
        "version": "0.1.0",
        "entry_point": "paperclip_hello.plugin",
        "builtin": False,
        "status": "loaded",
        "hooks": ["paperclip_providers"],
        "hook_api": ">=1.4,<2",
        "code": None,
        "reason": None,
    }
    assert report["problems"] == []
