"""Why a workspace could not be used, as a code for machines and a sentence for people."""

from __future__ import annotations

import re

from paperclip.wire.workspace_rules import WORKSPACE_NOT_ALLOWED, WORKSPACE_UNAVAILABLE

WORKSPACE_BUSY = "workspace_busy"
"""Another run (in this process or another one on the host) is working in the worktree."""

CODES = (WORKSPACE_NOT_ALLOWED, WORKSPACE_UNAVAILABLE, WORKSPACE_BUSY)

QUOTED_LINES = 6
QUOTED_CHARS = 600
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")


class WorkspaceError(Exception):
    """A workspace the runner refuses (``workspace_not_allowed``) or cannot make or use
    (``workspace_unavailable``), or one another run holds (``workspace_busy``)."""

    def __init__(self, code: str, message: str) -> None:
        if code not in CODES:
            raise ValueError(f"unknown workspace error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message


def scrub(text: str) -> str:
    """``text`` with the user information of every URL in it (``user:password@``) masked."""
    return _USERINFO.sub(r"\1***@", text)


def quote(stderr: str) -> str:
    """Git's stderr as a message may quote it: scrubbed, its last few lines, bounded."""
    lines = [line.strip() for line in scrub(stderr).splitlines() if line.strip()]
    text = " | ".join(lines[-QUOTED_LINES:])
    if len(text) > QUOTED_CHARS:
        text = "..." + text[-QUOTED_CHARS:]
    return text or "(git said nothing)"
