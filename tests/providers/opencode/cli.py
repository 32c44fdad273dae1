"""The pinned OpenCode CLI (``opencode-ai`` from npm) for the real-CLI tests.

``python -m tests.providers.opencode.cli install`` installs it into
``/var/tmp/paperclip-npm/opencode-<version>`` (idempotent); the tox env
``opencode-cli`` runs it first and sets ``PAPERCLIP_REQUIRE_OPENCODE_CLI=1``.
"""

from __future__ import annotations

import sys

from tests.support.npm_cli import NpmCli, main

OPENCODE = NpmCli(name="opencode", package="opencode-ai", version="1.18.33", executable="opencode")

if __name__ == "__main__":
    main(OPENCODE, sys.argv[1:])
