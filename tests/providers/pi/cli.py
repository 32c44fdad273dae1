"""The pinned Pi CLI (``@mariozechner/pi-coding-agent`` 0.73.x, Node 20) for the real-CLI tests.

``python -m tests.providers.pi.cli install`` installs it into
``/var/tmp/paperclip-npm/pi-<version>`` (idempotent); the tox env ``pi-cli``
runs it first and sets ``PAPERCLIP_REQUIRE_PI_CLI=1``.
"""

from __future__ import annotations

import sys

from tests.support.npm_cli import NpmCli, main

PI = NpmCli(name="pi", package="@mariozechner/pi-coding-agent", version="0.73.1", executable="pi")

if __name__ == "__main__":
    main(PI, sys.argv[1:])
