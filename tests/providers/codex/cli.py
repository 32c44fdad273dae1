"""The pinned real Codex CLI (``@openai/codex`` from npm) for the real-CLI tests.

``python -m tests.providers.codex.cli install`` installs it into
``/var/tmp/paperclip-npm/codex-<version>`` (idempotent); the tox env
``codex-cli`` runs it first and sets ``PAPERCLIP_REQUIRE_CODEX_CLI=1``, so that
a missing CLI fails there instead of skipping.
"""

from __future__ import annotations

import sys

from tests.support.npm_cli import NpmCli, main

CODEX = NpmCli(name="codex", package="@openai/codex", version="0.171.0", executable="codex")
PINNED = CODEX.version
require_cli = CODEX.require
"""The pinned CLI's launcher, or skip (fail where ``PAPERCLIP_REQUIRE_CODEX_CLI=1``)."""

if __name__ == "__main__":
    main(CODEX, sys.argv[1:])
