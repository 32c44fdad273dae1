"""Named failpoints: places where a test (or ``paperclip chaos``) makes this process crash.

Off unless armed by name in ``PAPERCLIP_FAILPOINTS`` (comma-separated), read
once when the process starts: ``runner.turn_started.before_ack=kill`` kills
the process (SIGKILL: no cleanup runs) the first time it passes the point;
``name=kill@3`` the third time; ``name=delay:8`` stalls the whole process
there for 8 s instead (a replica frozen at that moment while others go on). A restart test then hits the exact moment it
names instead of hoping a sleep lands there.

Adding a point is one line at the moment that matters,
``failpoint("part.moment.detail")``, plus one line in
:data:`paperclip.chaos.points.POINTS` (which process it lives in) so that
``paperclip chaos`` arms it too. A point that fires says so on stderr first,
``failpoint <name> fired``, so whoever reads the process's log (a person, or
the chaos command counting kills per point) knows why it died.
"""

from __future__ import annotations

import os
import signal
import time
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
    if armed.passed != armed.at:
        return
    if armed.action == "kill":
        os.write(2, f"failpoint {name} fired\n".encode())  # unbuffered: the kill is next
        os.kill(os.getpid(), signal.SIGKILL)
    elif armed.action.startswith("delay:"):
        os.write(2, f"failpoint {name} delayed\n".encode())
        time.sleep(float(armed.action.removeprefix("delay:")))  # blocks the loop: a frozen process
