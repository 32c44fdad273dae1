"""docs/plugins/authoring.md and every recipe of docs/plugins/recipes/, followed literally.

Each page's files (fenced blocks with a ``title``) are written and its commands
(``$`` lines of ``console`` blocks) are run, in the order of the page, as one
shell script in a clean folder: a fresh virtualenv, the plugin installed next
to hookspecs and the core, and its tests run (real turns among them). A
page's plugin imports only the contract, and its tests read a run only
through the test kit: neither imports the core nor touches its database.
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
DOCS = ROOT / "docs" / "plugins"
FENCE = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', re.MULTILINE | re.DOTALL)
EOF_MARK = "PAPERCLIP_WALK_EOF"
SUMMARY = re.compile(r"^=*\s*(\d+) passed\b(.*) in [\d.]+s", re.MULTILINE)
CORE_OR_DATABASE = re.compile(
    r"^\s*(from|import)\s+(paperclip|sqlalchemy|asyncpg|psycopg\w*)(\.|\s|$)", re.MULTILINE
)

PAGES = {
    "authoring.md": 3,
    "recipes/completion-guard.md": 4,
    "recipes/prompt-section.md": 3,
    "recipes/plugin-tool.md": 4,
    "recipes/real-turns.md": 3,
}
"""Each walked page, and how many tests its plugin has (all must pass)."""


def blocks(page: str) -> list[tuple[str, str, str]]:
    """(language, title, body) of every fenced block."""
    return FENCE.findall(page)


def walk_script(page: str) -> str:
    """The page as a shell script: titled blocks become files, ``$`` lines commands."""
    lines = ["set -euo pipefail"]
    for language, title, body in blocks(page):
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


def test_every_recipe_is_walked():
    assert {f"recipes/{p.name}" for p in (DOCS / "recipes").glob("*.md")} <= set(PAGES)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_walk_has_files_and_commands(name):
    script = walk_script((DOCS / name).read_text())
    for expected in (
        "cat > pyproject.toml",
        "/plugin.py <<",
        "cat > tests/",
        ".venv/bin/pytest -q",
    ):
        assert expected in script, expected
    assert "paperclip_provider_run(" in script


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_pages_code_imports_neither_the_core_nor_a_database_driver(name):
    for _, title, body in blocks((DOCS / name).read_text()):
        if title.endswith(".py"):
            assert not CORE_OR_DATABASE.search(body), f"{title} of {name}"


def run_walk(name: str, folder: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERCLIP_", "VIRTUAL_ENV"))}
    env.pop("PYTHONPATH", None)
    env["PAPERCLIP_SRC"] = str(ROOT)
    env["PAPERCLIP_DATA_DIR"] = str(tmp_path / "data")
    # The walk's real runs start their own embedded PostgreSQL, beside this session's one
    # (its user must reach the folder: the tox work dir is open to it, a pytest tmp dir may
    # not be).
    pgdata = os.environ.get("PAPERCLIP_TEST_PGDATA")
    if pgdata:
        env["PAPERCLIP_TEST_PGDATA"] = f"{pgdata}-walk"
    # uv comes with the test environment; the walk expects it on PATH.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    folder.mkdir()
    return subprocess.run(
        ["bash", "-c", walk_script((DOCS / name).read_text())],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_page_works_in_a_clean_folder(name, tmp_path):
    result = run_walk(name, tmp_path / "empty", tmp_path)

    assert result.returncode == 0, f"{result.stdout[-6000:]}\n{result.stderr[-4000:]}"
    [(passed, more)] = SUMMARY.findall(result.stdout)
    # Every test passed, and the page's settings draw no warning (a configuration's
    # deprecation is printed before the tests, outside the summary).
    assert (int(passed), more) == (PAGES[name], ""), result.stdout[-4000:]
    assert "Warning" not in result.stdout + result.stderr, result.stderr[-4000:]
    if name == "authoring.md":
        check_the_hello_plugin_is_listed(result.stdout)


def check_the_hello_plugin_is_listed(stdout: str) -> None:
    report = json.loads(stdout.strip().splitlines()[-1])
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
