"""Named failpoints: places where a test (or ``paperclip chaos``) makes this process crash.

Off unless armed by name in ``PAPERCLIP_FAILPOINTS`` (comma-separated), read
once when the process starts: ``runner.turn_started.before_ack=kill`` kills
the process (SIGKILL: no cleanup runs) the first time it passes the point;
``name=kill@3`` the third time. A restart test then hits the exact moment it
names instead of hoping a sleep lands there.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

ENV = "PAPERCLIP_FAILPOINTS"


@dataclass
class _Armed:
    action: str
    at: int
    passed: int = 0


def _parse(spec: str) -> dict[str, _Armed]:
    armed: dict[str, _Armed] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, action = item.partition("=")
        action, _, count = (action or "kill").partition("@")
        armed[name.strip()] = _Armed(action.strip(), int(count or 1))
    return armed


_ARMED = _parse(os.environ.get(ENV, ""))


def failpoint(name: str) -> None:
    """Crash here if ``name`` is armed (and this is the pass it is armed for)."""
    armed = _ARMED.get(name)
    if armed is None:
        return
    armed.passed += 1
    if armed.passed == armed.at and armed.action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
