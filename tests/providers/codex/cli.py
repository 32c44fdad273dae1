"""The pinned real Codex CLI for the real-CLI tests: where it is, and installing it.

``python -m tests.providers.codex.cli install`` installs ``@openai/codex`` at
the pinned version from the npm registry into a cache folder outside the user's
home (idempotent: a folder that already holds the pinned version is left
alone). The tox env ``codex-cli`` runs it before its tests, and sets
``PAPERCLIP_REQUIRE_CODEX_CLI=1`` so that a missing CLI fails there instead of
skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.npm_cli import npm_install

PINNED = "0.171.0"
CACHE = Path(os.environ.get("PAPERCLIP_CODEX_CLI_CACHE", f"/var/tmp/paperclip-npm/codex-{PINNED}"))
REQUIRE_VARIABLE = "PAPERCLIP_REQUIRE_CODEX_CLI"
HOW = f"run `tox -e codex-cli` (installs @openai/codex@{PINNED} into {CACHE})"


def cli_path() -> Path | None:
    """The ``codex`` launcher: ``$PAPERCLIP_CODEX_CLI``, or the cache's, if it exists."""
    configured = os.environ.get("PAPERCLIP_CODEX_CLI")
    path = Path(configured) if configured else CACHE / "node_modules" / ".bin" / "codex"
    return path if path.exists() else None


def installed_version(path: Path) -> str | None:
    try:
        done = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else None


def require_cli() -> Path:
    """The pinned CLI, or skip (fail where ``PAPERCLIP_REQUIRE_CODEX_CLI=1``) saying why."""
    path = cli_path()
    problem = None
    if shutil.which("node") is None:
        problem = "Node.js is not installed (the npm codex launcher needs it)"
    elif path is None:
        problem = f"the real Codex CLI is not installed: {HOW}"
    elif (version := installed_version(path)) != PINNED:
        problem = f"{path} is codex-cli {version}, these tests pin {PINNED}: {HOW}"
    if problem is None:
        assert path is not None
        return path
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(f"{problem} ({REQUIRE_VARIABLE}=1)", pytrace=False)
    pytest.skip(problem)


def install() -> int:
    """Install the pinned CLI into the cache unless it is already there."""
    path = CACHE / "node_modules" / ".bin" / "codex"
    if path.exists() and installed_version(path) == PINNED:
        print(f"codex-cli {PINNED} already in {CACHE}")
        return 0
    npm = shutil.which("npm")
    if npm is None:
        print("npm is not installed: cannot install the Codex CLI", file=sys.stderr)
        return 1
    CACHE.mkdir(parents=True, exist_ok=True)
    command = [*npm_install(npm, CACHE), "--no-audit", "--no-fund"]
    done = subprocess.run([*command, f"@openai/codex@{PINNED}"], check=False)
    if done.returncode != 0 or installed_version(path) != PINNED:
        print(f"installing @openai/codex@{PINNED} failed", file=sys.stderr)
        return 1
    print(f"installed codex-cli {PINNED} into {CACHE}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python -m tests.providers.codex.cli install")
    sys.exit(install())
